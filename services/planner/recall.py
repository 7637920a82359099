"""What the rules planner knows of each thread's earlier runs, and where it finds them.

"it", "the copy" and "again" refer to the thread's previous run. Each recent thread's last
run is kept in memory as the rules planner read it; each rules request is also a message
of its thread in the log (as a model run's is), so a planner whose memory lacks the
thread (a restart, a command that started its own mesh) reads its recent requests back,
each followed by what it was planned to (docs/grammar.md, Threads).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from contracts.events import AnyEvent, RunRequested, ThreadMessage
from services.planner.model.runs import Announce, message
from services.planner.recent import RECENT_THREADS, Recent
from services.planner.rules.parse import EarlierRun
from services.planner.run_state import fold

RunHistory = Callable[[str], Awaitable[Sequence[AnyEvent]]]
ThreadReader = Callable[[str], Awaitable[Sequence[ThreadMessage]]]


@dataclass
class RulesThreads:
    """Each thread's last rules run: in memory, else read back through ``thread`` and
    ``history``; ``announce`` publishes each rules request as its thread's message."""

    thread: ThreadReader | None = None
    history: RunHistory | None = None
    announce: Announce | None = None
    memory: Recent[str, EarlierRun] = field(default_factory=lambda: Recent(RECENT_THREADS))

    async def heard(self, event: RunRequested, now: float) -> None:
        """A rules request arrived: its thread's last run into memory from the log when
        memory lacks it, then the request published as its thread's message (apart from
        the plan; its id is derived from the request's, so a redelivery's copy is dropped).
        A request that is then refused has no plan, and is skipped when read back."""
        if self.memory.get(event.thread_id) is None and self.thread and self.history:
            earlier = await read_back(event, self.thread, self.history)
            if earlier is not None and self.memory.get(event.thread_id) is None:
                self.memory.put(event.thread_id, earlier)
        if self.announce is not None:
            await self.announce.publish(message(event, "user", event.prompt or "", now))


async def read_back(
    event: RunRequested, thread: ThreadReader, history: RunHistory
) -> EarlierRun | None:
    """The thread's last run as the rules planner would have remembered it, if any."""
    earlier: EarlierRun | None = None
    for said in await thread(event.thread_id):
        if said.role != "user" or said.run_id == event.run_id:
            continue
        planned = fold(await history(said.run_id)).plan
        if planned is None:
            continue  # refused or lost: it changed nothing "it" could mean
        ops = planned.operation_set.operations
        plans = tuple((op.tool_name, dict(op.args)) for op in ops)
        earlier = earlier.then(said.text, plans) if earlier else EarlierRun(said.text, plans)
    return earlier
