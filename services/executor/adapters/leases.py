"""One writer per scene: a lease in KV with an epoch that fences stale writers.

A lease expires ``ttl`` seconds after its last renewal, so a killed executor's scenes are
free again soon; its epoch goes up with every new holder, and a commit checks that the
holder still owns the epoch it started with.

A lease marked ``idle`` is a warm hold between runs (ADR 0037): it is renewed like any
other, and another owner may take it over before it expires only when asked to
(``take_idle``), by the same compare-and-set.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

import msgspec
from nats.js import JetStreamContext
from nats.js.errors import KeyDeletedError, KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue

from services.executor.domain.ports import Lease, LeaseHeld, LeaseLost
from services.runtime.nats.streams import ensure_kv


class KvLeases:
    def __init__(
        self,
        js: JetStreamContext,
        prefix: str,
        owner: str,
        ttl: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._js = js
        self._prefix = prefix
        self.owner = owner
        self.ttl = ttl
        self._clock = clock

    async def _kv(self) -> KeyValue:
        return await ensure_kv(self._js, self._prefix, "leases")

    async def acquire(self, scene_id: str, take_idle: bool = False) -> Lease:
        kv = await self._kv()
        now = self._clock()
        try:
            entry = await kv.get(scene_id)
        except (KeyNotFoundError, KeyDeletedError):
            entry = None
        current = msgspec.json.decode(entry.value, type=Lease) if entry and entry.value else None
        held = current and current.owner != self.owner and current.expires_at > now
        if current and held and not (current.idle and take_idle):
            raise LeaseHeld(
                scene_id, current.owner, current.expires_at - now, current.idle, current.epoch
            )
        lease = Lease(
            scene_id=scene_id,
            owner=self.owner,
            epoch=(current.epoch if current else 0) + 1,
            expires_at=now + self.ttl,
        )
        try:
            if entry is None:
                revision = await kv.create(scene_id, msgspec.json.encode(lease))
            else:
                revision = await kv.update(
                    scene_id, msgspec.json.encode(lease), last=entry.revision
                )
        except KeyWrongLastSequenceError:
            raise LeaseHeld(scene_id, "another executor", 0.2) from None
        return msgspec.structs.replace(lease, kv_revision=revision)

    async def retake(self, lease: Lease) -> Lease:
        # The get ``acquire`` starts with would read back this very hold: the
        # compare-and-set on its revision checks the same thing in one round trip.
        if lease.owner != self.owner:
            raise LeaseLost(f"lease on scene {lease.scene_id} is {lease.owner}'s, not ours")
        kv = await self._kv()
        taken = Lease(
            scene_id=lease.scene_id,
            owner=self.owner,
            epoch=lease.epoch + 1,
            expires_at=self._clock() + self.ttl,
        )
        try:
            revision = await kv.update(
                lease.scene_id, msgspec.json.encode(taken), last=lease.kv_revision
            )
        except KeyWrongLastSequenceError:
            raise LeaseLost(f"lease on scene {lease.scene_id} changed since it was held") from None
        return msgspec.structs.replace(taken, kv_revision=revision)

    async def renew(self, lease: Lease) -> Lease:
        kv = await self._kv()
        renewed = msgspec.structs.replace(lease, expires_at=self._clock() + self.ttl)
        try:
            revision = await kv.update(
                lease.scene_id, msgspec.json.encode(renewed), last=lease.kv_revision
            )
        except KeyWrongLastSequenceError:
            raise LeaseLost(f"lease on scene {lease.scene_id} was taken over") from None
        return msgspec.structs.replace(renewed, kv_revision=revision)

    async def release(self, lease: Lease) -> None:
        kv = await self._kv()
        expired = msgspec.structs.replace(lease, expires_at=0.0)
        # Someone else holds it now: nothing of ours to release.
        with contextlib.suppress(KeyWrongLastSequenceError):
            await kv.update(lease.scene_id, msgspec.json.encode(expired), last=lease.kv_revision)
