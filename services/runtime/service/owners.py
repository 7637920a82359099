"""Who owns what, folded from the log into memory: threads, scenes and approvals.

Ownership is read from the log, the only source of truth: a thread belongs to the user
whose run first used it, a scene to every user who ran something on it, an approval to
the user of its run. Scanning the log on every request grew with every run ever made, so
a tail of the log (``services/runtime/nats/tail.py``) folds the ``requested`` and
``approval_requested`` events into an ``OwnerIndex`` instead. Before answering, a lookup
waits until the index holds the newest such event in the log (one round trip), so it sees
exactly what a scan would have seen.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

from contracts import subjects
from contracts.errors import BlendmeshError
from contracts.events import AnyEvent, ApprovalRequested, RunRequested
from services.runtime.nats import delivered
from services.runtime.nats.tail import LogTail, TailError
from services.runtime.service.host import Bus

KINDS = ("requested", "approval_requested")


class IndexBehind(BlendmeshError, RuntimeError):
    """The index cannot answer as the log stands now: it did not catch up in time, could
    not follow the log, or was closed; the message says which."""


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
        self._tail: LogTail[AnyEvent] | None = None

    @property
    def tail(self) -> LogTail[AnyEvent]:
        """What follows the log into the index: wait on it (``caught_up``), or ``stop`` it."""
        if self._tail is None:
            prefix = self._bus.prefix
            self._tail = LogTail(
                "the ownership index",
                self._bus.js,
                subjects.stream_name(prefix),
                [subjects.any_run(prefix, kind) for kind in KINDS],
                partial(delivered.run_event, prefix),
                self._index.apply,
                self._timeout,
            )
        return self._tail

    async def current(self) -> OwnerIndex:
        """The index, once it holds every ownership event the log has now; else
        ``IndexBehind`` saying why."""
        try:
            await self.tail.caught_up()
        except TailError as exc:
            raise IndexBehind(str(exc)) from exc
        return self._index

    async def close(self) -> None:
        await self.tail.stop()
