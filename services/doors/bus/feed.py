"""The feed: each run event, passed on to the login of the run's own user.

A user's login cannot read the log (docs/adr/0015), so the door follows it for them and
publishes every run event on ``<prefix>.feed.<user>.run.<run_id>.<event>``, which only
that user's login may subscribe to. Core NATS, no stream: a program subscribes first,
then asks ``run.events`` for what came before, and drops the events it already has (by
``event_id``). The run's owner comes from its ``requested`` event, never from a field of
a later event.
"""

from __future__ import annotations

import contextlib
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js.api import DeliverPolicy

from contracts import subjects
from contracts.events import RunRequested, event_kind
from services.runtime.nats import delivered
from services.runtime.nats.ready import until_ready
from services.runtime.service.host import Bus

log = logging.getLogger("blendmesh.door")

OWNERS_KEPT = 10_000  # runs whose owner is remembered; older ones are read again


class Feed:
    def __init__(self, bus: Bus, owner_of: Callable[[str], Awaitable[RunRequested | None]]) -> None:
        self._bus = bus
        self._owner_of = owner_of
        self._owners: OrderedDict[str, str] = OrderedDict()
        self._sub: Subscription | None = None

    async def start(self) -> None:
        prefix = self._bus.prefix
        stream = subjects.stream_name(prefix)

        async def subscribe() -> Subscription:
            return await self._bus.js.subscribe(
                f"{prefix}.run.>",
                stream=stream,
                ordered_consumer=True,
                deliver_policy=DeliverPolicy.NEW,  # history is ``run.events``: no replay here
                cb=self._on_event,
            )

        self._sub = await until_ready(f"a feed of stream {stream}", subscribe, self._bus.ready_wait)

    async def stop(self) -> None:
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()
            self._sub = None

    async def _owner(self, event_run: str, requested: RunRequested | None) -> str | None:
        if requested is not None:
            self._remember(event_run, requested.user)
            return requested.user
        if (user := self._owners.get(event_run)) is not None:
            self._owners.move_to_end(event_run)
            return user
        found = await self._owner_of(event_run)
        if found is None:
            return None
        self._remember(event_run, found.user)
        return found.user

    def _remember(self, run_id: str, user: str) -> None:
        self._owners[run_id] = user
        self._owners.move_to_end(run_id)
        while len(self._owners) > OWNERS_KEPT:
            self._owners.popitem(last=False)

    async def _on_event(self, msg: Msg) -> None:
        event = delivered.run_event(self._bus.prefix, msg.subject, msg.data)
        run_id = subjects.run_id_in(msg.subject)
        if event is None or run_id is None:
            return
        try:
            user = await self._owner(run_id, event if isinstance(event, RunRequested) else None)
            if user is None:
                return
            kind = event_kind(event).removeprefix("run.")
            token = subjects.subject_token(user)
            await self._bus.nc.publish(
                subjects.feed(self._bus.prefix, token, run_id, kind), msg.data
            )
        except Exception:  # the feed is best effort: ``run.events`` has every event
            log.exception("door: could not pass on %s", msg.subject[:200])
