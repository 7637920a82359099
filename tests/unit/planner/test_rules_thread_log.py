"""The rules planner finds a thread's last run in the log when its memory lacks it.

A command that starts its own mesh starts a planner that heard nothing before: "it" in
``blendmesh run "move it up 1"`` must still be the cube the previous command made. Each
rules request is a message of its thread (published as it is planned); a planner that
does not remember the thread reads the newest request back, and that run's plan.
"""

from __future__ import annotations

from collections.abc import Sequence

from contracts.events import AnyEvent, Event, Planned, RunRequested, ThreadMessage
from services.planner.handlers import PlannerHandlers
from services.planner.recall import RulesThreads
from tests.support.planners import planner


class Log:
    """What a planner publishes and reads back: thread messages and runs' events."""

    def __init__(self) -> None:
        self.messages: list[ThreadMessage] = []
        self.runs: dict[str, list[AnyEvent]] = {}

    async def publish(self, event: Event) -> int:
        assert isinstance(event, ThreadMessage)
        self.messages.append(event)
        return len(self.messages)

    async def thread(self, thread_id: str) -> Sequence[ThreadMessage]:
        return [m for m in self.messages if m.thread_id == thread_id]

    async def history(self, run_id: str) -> Sequence[AnyEvent]:
        return self.runs.get(run_id, [])


def requested(run: str, prompt: str, thread: str = "t1") -> RunRequested:
    return RunRequested(
        event_id=f"e-{run}",
        at=0.0,
        run_id=run,
        request_id=f"q-{run}",
        thread_id=thread,
        user="ana",
        scene_id="s1",
        prompt=prompt,
    )


def fresh_planner(log: Log) -> PlannerHandlers:
    """A planner that has heard nothing yet, as after a restart, on ``log``."""
    handlers = planner(history=log.history)
    handlers.threads = RulesThreads(thread=log.thread, history=log.history, announce=log)
    return handlers


async def plan(log: Log, event: RunRequested) -> Planned:
    (planned,) = await fresh_planner(log).on_requested(event)
    assert isinstance(planned, Planned), planned
    log.runs[event.run_id] = [event, planned]
    return planned


async def test_it_in_the_next_run_after_a_restart_is_what_the_run_before_made() -> None:
    log = Log()
    await plan(log, requested("r1", "add a cube named Keg"))
    assert [(m.role, m.text, m.run_id) for m in log.messages] == [
        ("user", "add a cube named Keg", "r1")
    ]
    moved = await plan(log, requested("r2", "move it up 1"))
    assert [m.run_id for m in log.messages] == ["r1", "r2"]  # each request, once
    [op] = moved.operation_set.operations
    assert (op.tool_name, op.args["name"]) == ("object.transform", "Keg")


async def test_again_and_it_two_runs_on_after_a_restart_come_from_the_log() -> None:
    log = Log()
    await plan(log, requested("r1", "add a cube named Keg"))
    await plan(log, requested("r2", "move it up 2"))
    again = await plan(log, requested("r3", "again"))
    [op] = again.operation_set.operations
    assert (op.args["name"], op.args["location"]) == ("Keg", [0, 0, 2])
    colored = await plan(log, requested("r4", "rotate it 90 degrees"))
    assert colored.operation_set.operations[0].args["name"] == "Keg"


async def test_another_thread_does_not_lend_its_it() -> None:
    log = Log()
    await plan(log, requested("r1", "add a cube named Keg", thread="t1"))
    (refused, _) = await fresh_planner(log).on_requested(requested("r2", "move it up", "t2"))
    assert '"it" does not refer to a named object here' in refused.message  # type: ignore[attr-defined]


async def test_a_thread_whose_last_request_was_never_planned_reads_as_new() -> None:
    log = Log()
    await fresh_planner(log).on_requested(requested("r1", "add a cube named Keg"))
    # r1's plan never reached the log (lost, or refused): nothing to recall, no guess.
    (refused, _) = await fresh_planner(log).on_requested(requested("r2", "move it up"))
    assert '"it" does not refer' in refused.message  # type: ignore[attr-defined]
