"""A run completes only when its gates pass (spec 004 §8): the planner's side of it."""

from __future__ import annotations

import json

import msgspec
import pytest

from contracts.events import Executed, GatesEvaluated, Planned, RunCompleted, RunFailed, follow
from contracts.gates import GateEnvelope, awaits_gates
from contracts.operations import convert_operation_set
from services.planner.gates import gates_failure
from services.runtime.service.errors import Retry
from tests.support.planners import planner
from tests.unit.test_handlers import History, requested
from tests.unit.test_model_handlers import (
    MOVE_HERE,
    REQUESTED,
    Log,
    ScriptedModel,
    handlers,
    planned_at,
)
from tests.unit.test_model_handlers import executed as model_executed

PASSED = GateEnvelope(success=True)
FAILED = GateEnvelope(
    success=False,
    failed_gates=["MODIFIERS_EVALUATE"],
    messages=["modifier 'Bevel' of object 'Box' did not evaluate: no geometry"],
)


def planned() -> Planned:
    ops = [
        {
            "operation_id": "op01",
            "tool_name": "object.create",
            "args": {"primitive": "cube", "name": "Box"},
            "depends_on": [],
            "safety_level": "safe_write",
        },
        {
            "operation_id": "op02",
            "tool_name": "object.create",
            "args": {"primitive": "cone", "name": "Tip"},
            "depends_on": [],
            "safety_level": "safe_write",
        },
    ]
    return follow(
        requested(),
        Planned,
        1.0,
        scene_id="s1",
        planner="plan",
        operation_set=convert_operation_set({"request_id": "q1", "operations": ops}),
        schedule=["op01", "op02"],
        catalog_version="test",
    )


def committed(cause: Planned, inspection: str | None = "s1/00000001-h.inspection.json") -> Executed:
    return follow(
        cause,
        Executed,
        2.0,
        scene_id="s1",
        receipts=[],
        scene_hash="h",
        blend_path="/s1.blend",
        revision=1,
        inspection=inspection,
    )


def verdict(executed: Executed, envelope: GateEnvelope) -> GatesEvaluated:
    return follow(
        executed,
        GatesEvaluated,
        3.0,
        scene_id="s1",
        revision=1,
        guardians=["modifiers_evaluate"],
        result="{}",
        envelope=envelope,
    )


@pytest.mark.clause("004-§validation.4")
async def test_planner_when_execution_committed_waits_for_the_gates() -> None:
    plan = planned()
    done = committed(plan)
    assert awaits_gates(done)
    assert await planner(history=History()).on_executed(done) == []


async def test_planner_when_nothing_was_committed_completes_without_gates() -> None:
    history = History()
    history.events = [requested()]
    execution = committed(planned(), inspection=None)
    (ended,) = await planner(history=history).on_executed(execution)
    assert isinstance(ended, RunCompleted) and ended.causation_id == execution.event_id
    assert ended.gates is None and ended.revision == 1  # the commit, unjudged by any gate


async def test_planner_when_gates_pass_completes_the_run() -> None:
    plan = planned()
    done = committed(plan)
    history = History()
    history.events = [requested(), plan, done]
    (ended,) = await planner(history=history).on_gates(verdict(done, PASSED))
    assert isinstance(ended, RunCompleted) and ended.blend_path == "/s1.blend"


@pytest.mark.clause("004-§validation.4")
async def test_planner_when_gates_fail_ends_rules_run_gates_failed_with_repair() -> None:
    plan = planned()
    done = committed(plan)
    history = History()
    history.events = [requested(), plan, done]
    (ended,) = await planner(history=history).on_gates(verdict(done, FAILED))
    assert isinstance(ended, RunFailed)
    contract = ended.failure
    assert contract.error_code == "GATES_FAILED" and contract.recoverable
    assert "MODIFIERS_EVALUATE" in contract.retry_hint and "'Bevel'" in contract.retry_hint
    # Only the operation that made what the message names is to be replaced.
    assert [(s.operation_id, s.action) for s in contract.minimal_repair_plan] == [
        ("op01", "replace_args")
    ]


async def test_planner_when_gates_judged_an_execution_not_in_the_log_retries() -> None:
    history = History()
    history.events = [requested()]
    judged = verdict(committed(planned()), PASSED)
    with pytest.raises(
        Retry, match=f"the execution gates {judged.event_id} judged is not in the log"
    ):
        await planner(history=history).on_gates(judged)


@pytest.mark.clause("004-§gate-envelope.2", "004-§validation.4")
async def test_gemini_run_when_gates_fail_sends_the_envelope_into_the_next_iteration() -> None:
    first = planned_at(1)
    done = msgspec.structs.replace(
        model_executed(first, False), revision=1, inspection="s1/00000001-h.inspection.json"
    )
    model = ScriptedModel(MOVE_HERE)
    log = Log(REQUESTED, first, done)
    (again,) = await handlers(model, log).on_gates(verdict(done, FAILED))
    assert isinstance(again, Planned) and again.iteration == 2
    said = model.requests[0].contents[-1].text
    assert "verification gates" in said
    # 004 §8: the model gets the whole envelope, the gates' messages above all, since they
    # say what to fix.
    sent = json.loads(said.split("Gate envelope: ", 1)[1].split("\n", 1)[0])
    assert sent == {
        "success": False,
        "failed_gates": ["MODIFIERS_EVALUATE"],
        "messages": ["modifier 'Bevel' of object 'Box' did not evaluate: no geometry"],
    }


async def test_gemini_run_when_gates_fail_on_the_last_iteration_fails_gates_failed() -> None:
    last = planned_at(3)
    done = msgspec.structs.replace(
        model_executed(last, False), revision=1, inspection="s1/00000001-h.inspection.json"
    )
    events = await handlers(ScriptedModel(), Log(REQUESTED, last, done)).on_gates(
        verdict(done, FAILED)
    )
    ended = next(e for e in events if isinstance(e, RunFailed))
    assert ended.failure.error_code == "GATES_FAILED"


def test_gates_failure_when_no_message_names_an_operation_repairs_nothing() -> None:
    contract = gates_failure(
        GateEnvelope(success=False, failed_gates=["POLYGON_BUDGET"], messages=["too many"]),
        planned().operation_set.operations,
    )
    assert contract.minimal_repair_plan == [] and "POLYGON_BUDGET" in contract.retry_hint
