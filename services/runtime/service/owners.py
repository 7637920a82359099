"""Who owns what, folded from the log into memory: threads, scenes and approvals.

Ownership is read from the log, the only source of truth: a thread belongs to the user
whose run first used it, a scene to every user who ran something on it, an approval to
the user of its run. Scanning the log on every request grew with every run ever made, so
ordered consumers tail the ``requested`` and ``approval_requested`` events into an
``OwnerIndex`` instead. Before answering, a lookup waits until the index holds the newest
such event in the log (one round trip), so it sees exactly what a scan would have seen.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js.api import DeliverPolicy
from nats.js.errors import NotFoundError

from contracts import subjects
from contracts.errors import BlendmeshError
from contracts.events import AnyEvent, ApprovalRequested, RunRequested
from services.runtime.nats import delivered
from services.runtime.nats.retry import poll
from services.runtime.service.host import Bus

KINDS = ("requested", "approval_requested")


class IndexBehind(BlendmeshError, RuntimeError):
    """The index did not reach the log's newest events in time."""


@dataclass
class OwnerIndex:
    """The ownership facts of the events applied so far (no I/O)."""

    threads: dict[str, str] = field(default_factory=dict)  # thread -> first user
    scenes: set[tuple[str, str]] = field(default_factory=set)  # (scene, user)
    approvals: dict[str, ApprovalRequested] = field(default_factory=dict)

    def apply(self, event: AnyEvent) -> None:
        match event:
            case RunRequested():
                self.threads.setdefault(event.thread_id, event.user)
                self.scenes.add((event.scene_id, event.user))
            case ApprovalRequested():
                # The first word on an approval stands: a later event reusing its id (only
                # a forgery would) never takes it over.
                self.approvals.setdefault(event.approval_id, event)


class LogOwners:
    """An ``OwnerIndex`` kept current by tailing the log; started on first use."""

    def __init__(self, bus: Bus, catch_up_timeout: float = 5.0) -> None:
        self._bus = bus  # read when first used: the app may be built before it connects
        self._timeout = catch_up_timeout
        self._index = OwnerIndex()
        self._seen: dict[str, int] = dict.fromkeys(KINDS, 0)  # newest stream seq applied
        self._subs: list[Subscription] = []
        self._starting = asyncio.Lock()

    async def current(self) -> OwnerIndex:
        """The index, once it holds every ownership event the log has now."""
        await self._start()
        stream = subjects.stream_name(self._bus.prefix)
        newest: dict[str, int] = {}
        for kind in KINDS:
            try:
                last = await self._bus.js.get_last_msg(
                    stream, subjects.any_run(self._bus.prefix, kind)
                )
            except NotFoundError:
                continue
            newest[kind] = last.seq or 0

        async def behind() -> list[str]:
            return [kind for kind, seq in newest.items() if self._seen[kind] < seq]

        lagging = await poll(behind, lambda kinds: not kinds, self._timeout, pause=0.01)
        if lagging:
            raise IndexBehind(f"the ownership index is behind the log ({lagging[0]}); try again")
        return self._index

    async def close(self) -> None:
        for sub in self._subs:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
        self._subs = []

    async def _start(self) -> None:
        async with self._starting:
            if self._subs:
                return
            stream = subjects.stream_name(self._bus.prefix)
            for kind in KINDS:
                self._subs.append(
                    await self._bus.js.subscribe(
                        subjects.any_run(self._bus.prefix, kind),
                        stream=stream,
                        ordered_consumer=True,
                        deliver_policy=DeliverPolicy.ALL,
                        cb=self._applier(kind),
                    )
                )

    def _applier(self, kind: str) -> Callable[[Msg], Awaitable[None]]:
        prefix = self._bus.prefix
        stream = subjects.stream_name(prefix)

        async def apply(msg: Msg) -> None:
            # Only the log's own ``kind`` events count: a push consumer aimed at this
            # inbox by someone else delivers other subjects (ADR 0015).
            if not msg.subject.endswith(f".{kind}"):
                delivered.log.warning("ignored a delivery on %s", msg.subject[:200])
                return
            try:
                metadata = msg.metadata
            except ValueError:  # not a JetStream delivery at all
                return
            if metadata.stream != stream:
                return
            event = delivered.run_event(prefix, msg.subject, msg.data)
            if event is not None:
                self._index.apply(event)
            self._seen[kind] = max(self._seen[kind], metadata.sequence.stream)

        return apply
