"""The planner finishes a run from what it heard moments ago, without reading it back,
and a replay past the duplicate window still gives no run a second outcome."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import pytest

from contracts.events import (
    AnyEvent,
    Denied,
    Executed,
    Planned,
    RunCompleted,
    RunFailed,
    RunRequested,
    ThreadMessage,
    event_kind,
    follow,
)
from contracts.failures import failure
from services.planner.handlers import PlannerHandlers
from services.planner.recent import RECENT_EXECUTIONS, Recent
from tests.unit.test_gates_flow import FAILED, PASSED, committed, verdict
from tests.unit.test_model_handlers import GOOD, REQUESTED, Log, ScriptedModel, handlers
from tests.unit.test_model_handlers import executed as model_executed


class CountedLog(Log):
    """The run's log: counts the times it is read back, and answers which kinds it holds."""

    def __init__(self, *events: AnyEvent) -> None:
        super().__init__(*events)
        self.reads = 0

    async def __call__(self, run_id: str) -> Sequence[AnyEvent]:
        self.reads += 1
        return await super().__call__(run_id)

    async def kinds(self, run_id: str) -> set[str]:
        return {
            event_kind(e).removeprefix("run.")
            for e in self.events
            if getattr(e, "run_id", None) == run_id
        }


def wired(log: CountedLog, *answers: str) -> PlannerHandlers:
    """A planner with the model wired in, as the mesh starts it."""
    planner = handlers(ScriptedModel(*answers), log)
    planner.kinds = log.kinds
    return planner


RULES = RunRequested(**{**msgspec.structs.asdict(REQUESTED), "planner": "rules"})


async def planned_run(planner: PlannerHandlers, log: CountedLog) -> tuple[Planned, Executed]:
    """A rules run planned and committed: the planner heard its request and execution."""
    log.events.append(RULES)
    (planned,) = await planner.on_requested(RULES)
    assert isinstance(planned, Planned)
    done = committed(planned)
    log.events += [planned, done]
    assert await planner.on_executed(done) == []  # it waits for the gates
    return planned, done


async def test_plain_run_when_gates_pass_completes_without_reading_the_run_back() -> None:
    log = CountedLog()
    planner = wired(log)
    _, done = await planned_run(planner, log)
    (ended,) = await planner.on_gates(verdict(done, PASSED))
    assert isinstance(ended, RunCompleted) and ended.blend_path == "/s1.blend"
    assert ended.receipts == done.receipts and ended.gates == PASSED
    assert log.reads == 0


async def test_plain_run_when_replayed_after_it_completed_gets_no_second_outcome() -> None:
    log = CountedLog()
    planner = wired(log)
    _, done = await planned_run(planner, log)
    gates = verdict(done, PASSED)
    (ended,) = await planner.on_gates(gates)
    assert isinstance(ended, RunCompleted)
    log.events += [gates, ended]
    # The consumer recreated: the same planner, then a restarted one, hear it all again.
    for again in (planner, wired(log)):
        assert await again.on_requested(RULES) == []
        assert await again.on_executed(done) == []
        assert await again.on_gates(gates) == []
    assert [type(e) for e in log.events].count(RunCompleted) == 1


async def test_plain_run_when_replayed_after_it_failed_gets_no_second_outcome() -> None:
    log = CountedLog()
    planner = wired(log)
    _, done = await planned_run(planner, log)
    gates = verdict(done, FAILED)
    (failed,) = await planner.on_gates(gates)
    assert isinstance(failed, RunFailed)
    log.events += [gates, failed]
    assert await planner.on_executed(done) == []
    # A passing verdict replayed for the same execution must not complete a failed run.
    assert await planner.on_gates(verdict(done, PASSED)) == []


async def test_plain_run_when_gates_fail_reads_the_plan_to_name_the_repair() -> None:
    log = CountedLog()
    planner = wired(log)
    _, done = await planned_run(planner, log)
    (ended,) = await planner.on_gates(verdict(done, FAILED))
    assert isinstance(ended, RunFailed) and ended.failure.error_code == "GATES_FAILED"
    assert [s.operation_id for s in ended.failure.minimal_repair_plan] == ["op01"]
    assert log.reads == 1


async def test_run_when_planner_did_not_hear_its_request_reads_the_run_back() -> None:
    log = CountedLog()
    _, done = await planned_run(wired(log), log)
    restarted = wired(log)  # its memory is empty: the log decides
    (ended,) = await restarted.on_gates(verdict(done, PASSED))
    assert isinstance(ended, RunCompleted) and log.reads == 1


async def test_model_run_when_gates_pass_reads_the_run_for_the_model() -> None:
    log = CountedLog(REQUESTED)
    planner = wired(log, GOOD)
    _, _, planned = await planner.on_requested(REQUESTED)
    assert isinstance(planned, Planned) and planned.planner == "gemini"
    done = msgspec.structs.replace(
        model_executed(planned, False), revision=1, inspection="s1/00000001-h.inspection.json"
    )
    log.events += [planned, done]
    assert await planner.on_executed(done) == []
    ended, said = await planner.on_gates(verdict(done, PASSED))
    assert isinstance(ended, RunCompleted) and isinstance(said, ThreadMessage)
    assert log.reads == 1


async def test_run_when_two_requests_ask_different_planners_reads_the_run_back() -> None:
    log = CountedLog()
    planner = wired(log, GOOD)
    planned, _ = await planned_run(planner, log)
    await planner.on_requested(REQUESTED)  # the same run id, the model's planner this time
    reads = log.reads
    plain = msgspec.structs.replace(committed(planned), inspection=None)
    await planner.on_executed(plain)
    assert log.reads == reads + 1


async def test_plain_run_when_denied_fails_without_reading_the_run_back() -> None:
    log = CountedLog()
    planner = wired(log)
    log.events.append(RULES)
    (planned,) = await planner.on_requested(RULES)
    assert isinstance(planned, Planned)
    denied = follow(
        planned, Denied, 3.0, failure=failure("POLICY_BLOCKED", "x"), message="no", operation_ids=[]
    )
    (failed,) = await planner.on_denied(denied)
    assert isinstance(failed, RunFailed) and log.reads == 0
    log.events += [planned, denied, failed]
    assert await planner.on_denied(denied) == []  # replayed: the run failed already


def test_recent_when_full_forgets_the_oldest_entry() -> None:
    recent: Recent[str, int] = Recent(2)
    recent.put("a", 1)
    recent.put("b", 2)
    recent.put("a", 3)  # written again: now the newest
    recent.put("c", 4)
    assert (recent.get("a"), recent.get("b"), recent.get("c")) == (3, None, 4)
    assert recent.pop("a") == 3 and recent.pop("a") is None and len(recent) == 1


def test_recent_when_limit_below_one_refuses_it() -> None:
    with pytest.raises(ValueError, match="at least one entry, not 0"):
        Recent(0)


async def test_planner_when_execution_was_pushed_out_reads_it_from_the_log() -> None:
    log = CountedLog()
    planner = wired(log)
    _, done = await planned_run(planner, log)
    for n in range(RECENT_EXECUTIONS):
        await planner.on_executed(msgspec.structs.replace(done, event_id=f"other-{n}"))
    (ended,) = await planner.on_gates(verdict(done, PASSED))
    assert isinstance(ended, RunCompleted) and log.reads == 1
