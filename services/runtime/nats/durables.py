"""Keeping a durable consumer as its service configured it.

Deleting a service's durable consumer used to stop that service silently, and a changed
filter made it skip events for good. The consumer loop checks its consumer now and then:
a missing one is recreated, a changed one replaced, and both are logged as warnings that
name the consumer and what changed (docs/adr/0007-jetstream-api-least-privilege.md).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from typing import Any

from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig, DeliverPolicy
from nats.js.errors import APIError, NotFoundError

from services.runtime.nats.ready import not_yet

log = logging.getLogger("blendmesh.consumer")

# Where a consumer starts only matters when it is created, and a recreated one starts
# after what was acknowledged: these fields are not part of "as configured".
_POSITION = frozenset({"deliver_policy", "opt_start_seq", "opt_start_time"})


def changes(expected: ConsumerConfig, actual: ConsumerConfig) -> dict[str, tuple[Any, Any]]:
    """The fields of ``actual`` that differ from ``expected``: name -> (expected, actual)."""
    out: dict[str, tuple[Any, Any]] = {}
    for f in dataclasses.fields(ConsumerConfig):
        if f.name in _POSITION:
            continue
        want, have = getattr(expected, f.name), getattr(actual, f.name)
        if f.name == "metadata":  # the server adds its own ``_nats.*`` entries
            want, have = _own(want), _own(have)
        if want != have:
            out[f.name] = (want, have)
    return out


def _own(metadata: dict[str, str] | None) -> dict[str, str]:
    return {k: v for k, v in (metadata or {}).items() if not k.startswith("_nats.")}


def _describe(found: dict[str, tuple[Any, Any]]) -> str:
    return ", ".join(f"{name} {want!r} -> {have!r}" for name, (want, have) in found.items())


class DurableConsumer:
    """One durable consumer of ``stream``, kept as ``config`` says.

    Several processes may keep the same one (executors scale out); each restores it on its
    own, and restoring one that another process already restored changes nothing.
    """

    def __init__(self, js: JetStreamContext, stream: str, config: ConsumerConfig) -> None:
        assert config.durable_name, "a durable consumer needs a durable name"
        self._js = js
        self._stream = stream
        self._config = config
        self._name = config.durable_name
        self._applied: ConsumerConfig | None = None  # as the server confirmed it to us
        self._floor = 0  # stream seq acknowledged while it was as configured

    async def ensure(self) -> None:
        """Create the consumer, or find it as configured, or put it back (loudly)."""
        try:
            info = await self._js.consumer_info(self._stream, self._name)
        except NotFoundError:
            if self._applied is not None:
                log.warning(
                    "%s: durable consumer %s of %s was deleted; recreating it as configured, "
                    "from stream sequence %d",
                    self._name,
                    self._name,
                    self._stream,
                    self._floor + 1,
                )
            await self._create(self._from_floor())
            return
        if self._applied is None:
            await self._apply(info.config, info.ack_floor.stream_seq if info.ack_floor else 0)
            return
        found = changes(self._applied, info.config)
        if not found:
            self._floor = info.ack_floor.stream_seq if info.ack_floor else self._floor
            return
        # A changed filter may have let events go by unseen: start again after the last
        # one acknowledged while the consumer was as configured.
        log.warning(
            "%s: durable consumer %s of %s was changed (%s); replacing it as configured, "
            "from stream sequence %d",
            self._name,
            self._name,
            self._stream,
            _describe(found),
            self._floor + 1,
        )
        await self._replace(self._from_floor())

    async def _apply(self, existing: ConsumerConfig, floor: int) -> None:
        """At start: update the existing consumer to this configuration."""
        self._floor = floor
        wanted = self._config.evolve(**{k: getattr(existing, k) for k in _POSITION})
        try:
            info = await self._js.add_consumer(self._stream, wanted)  # create or update
        except APIError as exc:  # a field that cannot be updated (the ack policy, say)
            if not_yet(exc):  # a cluster still electing: not a reason to replace it
                raise
            log.warning(
                "%s: durable consumer %s of %s differs from its configuration in a way "
                "that cannot be updated (%s); replacing it, from stream sequence %d",
                self._name,
                self._name,
                self._stream,
                exc.description or exc,
                floor + 1,
            )
            await self._replace(self._from_floor())
            return
        self._applied = info.config
        found = changes(info.config, existing)
        if found:  # someone changed it, or this service's settings did
            log.warning(
                "%s: durable consumer %s of %s differed from its configuration (%s); updated it",
                self._name,
                self._name,
                self._stream,
                _describe(found),
            )

    def _from_floor(self) -> ConsumerConfig:
        if self._floor <= 0:
            return self._config
        return self._config.evolve(
            deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=self._floor + 1
        )

    async def _replace(self, config: ConsumerConfig) -> None:
        with contextlib.suppress(NotFoundError):
            await self._js.delete_consumer(self._stream, self._name)
        await self._create(config)

    async def _create(self, config: ConsumerConfig) -> None:
        info = await self._js.add_consumer(self._stream, config)
        self._applied = info.config
