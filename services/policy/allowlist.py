"""Standing approvals: the KV adapter, and the responders for list / revoke queries.

``approve_and_always_allow`` writes an entry per (user, tool, scene); later decisions that
would ask for approval allow instead, naming ``allowlist#<entry id>``. The entries live in
the ``allowlist`` KV bucket; clients (the CLI, the gateway) list and revoke them over
request/reply, so only the policy service writes the bucket.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable

import msgspec
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js.client import JetStreamContext

from contracts import subjects
from contracts.allowlist import (
    LIST,
    REVOKE,
    AllowlistEntry,
    AllowlistListQuery,
    AllowlistReply,
    AllowlistRevoke,
    entry_id,
)
from contracts.events import AllowlistRevoked, derive_event_id
from services.policy.ports import Allowlist
from services.runtime.nats import delivered
from services.runtime.nats.kv import TypedKv
from services.runtime.service.publishers import EventPublisher

log = logging.getLogger(__name__)
BUCKET = "allowlist"
MAX_ENTRIES = 10_000  # entries one listing reads; past it, listing fails saying so


class KvAllowlist:
    """The entries in the ``<prefix>_allowlist`` KV bucket, keyed by entry id."""

    def __init__(self, js: JetStreamContext, prefix: str) -> None:
        self._table = TypedKv(js, prefix, BUCKET, AllowlistEntry)

    async def _get(self, key: str) -> AllowlistEntry | None:
        found = await self._table.get(key)
        return found.value if found else None

    async def find(self, user: str, tool: str, scene_id: str) -> AllowlistEntry | None:
        return await self._get(entry_id(user, tool, scene_id))

    async def add(self, entry: AllowlistEntry) -> None:
        await self._table.put(entry.entry_id, entry)

    async def entries(self, user: str | None = None) -> list[AllowlistEntry]:
        keys = await self._table.keys(limit=MAX_ENTRIES)
        found = [e for e in [await self._get(k) for k in keys] if e is not None]
        return sorted(
            (e for e in found if user is None or e.user == user),
            key=lambda e: (e.created_at, e.entry_id),
        )

    async def revoke(self, entry_id: str, user: str | None = None) -> bool:
        entry = await self._get(entry_id)
        if entry is None or (user is not None and entry.user != user):
            return False
        await self._table.delete(entry_id)
        return True


_encoder = msgspec.json.Encoder()


def revoked(entry: AllowlistEntry, by: str, now: float) -> AllowlistRevoked:
    """The log's entry for withdrawing ``entry``. Its id is derived from the entry as
    granted, so asking again after a lost reply records it once; a later grant of the same
    (user, tool, scene) is a new entry, and its revocation a new event."""
    return AllowlistRevoked(
        event_id=derive_event_id(f"{entry.entry_id}@{entry.created_at!r}", "allowlist.revoked"),
        at=now,
        entry=entry,
        revoked_by=by or "unknown",
    )


class AllowlistResponders:
    """Answers ``allowlist.list`` and ``allowlist.revoke`` from an Allowlist; a revocation
    is recorded in the log before the entry leaves the bucket."""

    def __init__(
        self,
        nc: Client,
        prefix: str,
        allowlist: Allowlist,
        record: EventPublisher,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._nc = nc
        self._prefix = prefix
        self._allowlist = allowlist
        self._record = record
        self._clock = clock
        self._subs: list[Subscription] = []

    async def start(self) -> None:
        for name in (LIST, REVOKE):
            subject = subjects.query(self._prefix, name)
            self._subs.append(
                await self._nc.subscribe(subject, queue="policy", cb=self._on_request)
            )

    async def stop(self) -> None:
        for sub in self._subs:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()

    async def _on_request(self, msg: Msg) -> None:
        if not delivered.answerable(msg.reply, msg.headers):
            return  # nobody to answer, a stream's delivery, or a reply aimed off the inboxes
        try:
            reply = await self.answer(msg.subject.rsplit(".query.", 1)[-1], msg.data)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            reply = AllowlistReply(ok=False, error=f"unreadable request: {exc}")
        except Exception as exc:
            log.exception("policy: allowlist query on %s failed", msg.subject)
            reply = AllowlistReply(ok=False, error=f"the policy service failed ({exc!r})")
        with contextlib.suppress(Exception):
            await msg.respond(_encoder.encode(reply))

    async def answer(self, name: str, data: bytes) -> AllowlistReply:
        if name == LIST:
            query = msgspec.json.decode(data or b"{}", type=AllowlistListQuery)
            return AllowlistReply(ok=True, entries=await self._allowlist.entries(query.user))
        revoke = msgspec.json.decode(data, type=AllowlistRevoke)
        entry = next(
            (
                e
                for e in await self._allowlist.entries(revoke.user)
                if e.entry_id == revoke.entry_id
            ),
            None,
        )
        if entry is None:
            return AllowlistReply(
                ok=False,
                error=f"no allowlist entry {revoke.entry_id}; `blendmesh allowlist` lists them",
            )
        # Recorded first: a revocation the log does not hold never happens, and one whose
        # delete then fails is recorded again (the same id) when it is asked again.
        await self._record.publish(revoked(entry, revoke.revoked_by, self._clock()))
        await self._allowlist.revoke(revoke.entry_id, revoke.user)
        return AllowlistReply(ok=True, entries=[entry])
