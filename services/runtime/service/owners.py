"""Who owns what, folded from the log into memory: threads, scenes and approvals.

Ownership is read from the log, the only source of truth: a thread belongs to the user
whose run first used it, a scene to every user who ran something on it, an approval to
the user of its run. Scanning the log on every request grew with every run ever made, so
ordered consumers tail the ``requested`` and ``approval_requested`` events into an
``OwnerIndex`` instead. Before answering, a lookup waits until the index holds the newest
such event in the log (one round trip), so it sees exactly what a scan would have seen.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nats.aio.msg import Msg

from contracts import subjects
from contracts.errors import BlendmeshError
from contracts.events import AnyEvent, ApprovalRequested, RunRequested
from services.runtime.nats import delivered
from services.runtime.nats.tail import LogTail
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
        self._kinds: dict[str, str] = {}  # filter -> kind
        self._tail: LogTail | None = None

    async def current(self) -> OwnerIndex:
        """The index, once it holds every ownership event the log has now."""
        lagging = await self._follow().caught_up(self._timeout)
        if lagging:
            kind = self._kinds[lagging[0]]
            raise IndexBehind(f"the ownership index is behind the log ({kind}); try again")
        return self._index

    async def close(self) -> None:
        if self._tail is not None:
            await self._tail.close()

    def _follow(self) -> LogTail:
        if self._tail is None:
            prefix = self._bus.prefix
            self._kinds = {subjects.any_run(prefix, kind): kind for kind in KINDS}
            stream = subjects.stream_name(prefix)
            self._tail = LogTail(self._bus.js, stream, list(self._kinds), self._handle)
        return self._tail

    def _handle(self, follows: str, msg: Msg) -> int | None:
        prefix = self._bus.prefix
        kind = self._kinds[follows]
        # Only the log's own ``kind`` events count: a push consumer aimed at this
        # inbox by someone else delivers other subjects (ADR 0015).
        if not msg.subject.endswith(f".{kind}"):
            delivered.log.warning("ignored a delivery on %s", msg.subject[:200])
            return None
        try:
            metadata = msg.metadata
        except ValueError:  # not a JetStream delivery at all
            return None
        if metadata.stream != subjects.stream_name(prefix):
            return None
        event = delivered.run_event(prefix, msg.subject, msg.data)
        if event is not None:
            self._index.apply(event)
        return metadata.sequence.stream
