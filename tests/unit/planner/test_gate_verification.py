"""Spec 004 §1/§7: ``meta.requires_gate_verification`` is read and honoured. A response that
requires verification completes only once the guardians passed its revision; an execution
no gate can judge fails closed (GATES_FAILED). False waives nothing: the mesh's own gates
still judge every revision they can (docs/adr/0028)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from contracts.events import Executed, Planned, RunCompleted, RunFailed, ThreadMessage
from contracts.failures import failure
from services.planner.gates import UNVERIFIED_GATE, unverified
from tests.support.geonode_fixture import subdivide
from tests.unit.test_geonodes_planner import (
    Log,
    ScriptedModel,
    executed,
    handlers,
    receipt,
    requested,
)


def without_gates(planned: Planned) -> Executed:
    """An execution that left no inspected revision: no guardian can judge it."""
    return msgspec.structs.replace(
        executed(planned, receipt("step_1.01")), revision=None, inspection=None
    )


def verify(flag: bool) -> dict[str, Any]:
    return {**subdivide(), "meta": {"requires_gate_verification": flag}}


async def planned_from(plan: dict[str, Any]) -> Planned:
    (planned,) = await handlers().on_requested(requested(plan=plan))
    assert isinstance(planned, Planned)
    return planned


@pytest.mark.clause("004-§contract.2")
@pytest.mark.parametrize("flag", [True, False])
async def test_plan_when_response_sets_requires_gate_verification_the_plan_carries_it(
    flag: bool,
) -> None:
    assert (await planned_from(verify(flag))).requires_gate_verification is flag


async def test_plan_when_meta_omitted_requires_verification_and_an_operation_set_does_not() -> None:
    response = {k: v for k, v in subdivide().items() if k != "meta"}
    assert (await planned_from(response)).requires_gate_verification
    op_set = {
        "request_id": "q1",
        "operations": [
            {"operation_id": "op1", "tool_name": "scene.snapshot", "args": {},
             "depends_on": [], "safety_level": "read_only"},
        ],
    }  # fmt: skip
    (planned,) = await handlers().on_requested(requested(plan=op_set))
    assert isinstance(planned, Planned) and not planned.requires_gate_verification


@pytest.mark.clause("004-§validation.4", "000-§failure-contract.9")
async def test_executed_when_verification_required_and_no_gate_can_judge_fails_closed() -> None:
    planner = handlers()
    (planned,) = await planner.on_requested(requested(plan=verify(True)))
    assert isinstance(planned, Planned)
    planner.history = Log(requested(plan=verify(True)), planned)
    (failed,) = await planner.on_executed(without_gates(planned))
    assert isinstance(failed, RunFailed) and failed.failure.error_code == "GATES_FAILED"
    assert "meta.requires_gate_verification" in failed.message
    assert failed.failure.retry_hint.startswith(UNVERIFIED_GATE)
    # Only a person can say the scene needs no verifying: no follow-up plan is safe.
    assert failed.failure.recoverable is False


@pytest.mark.clause("004-§validation.4")
async def test_executed_when_verification_required_and_gates_will_judge_waits_for_them() -> None:
    planner = handlers()
    (planned,) = await planner.on_requested(requested(plan=verify(True)))
    assert isinstance(planned, Planned)
    assert await planner.on_executed(executed(planned, receipt("step_1.01"))) == []


async def test_executed_when_verification_not_required_and_no_gate_can_judge_completes() -> None:
    planner = handlers()
    (planned,) = await planner.on_requested(requested(plan=verify(False)))
    assert isinstance(planned, Planned)
    planner.history = Log(requested(plan=verify(False)), planned)
    execution = without_gates(planned)
    (done,) = await planner.on_executed(execution)
    assert isinstance(done, RunCompleted) and done.causation_id == execution.event_id
    assert done.summary == "1 of 1 operations applied to scene s1" and done.gates is None


async def test_executed_when_planner_restarted_reads_the_plan_and_still_fails_closed() -> None:
    planned = await planned_from(verify(True))
    planner = handlers(log=Log(requested(plan=verify(True)), planned))  # heard nothing itself
    (failed,) = await planner.on_executed(without_gates(planned))
    assert isinstance(failed, RunFailed) and failed.failure.error_code == "GATES_FAILED"


async def test_model_run_when_verification_required_and_unjudged_fails_and_tells_thread() -> None:
    planned = msgspec.structs.replace(
        await planned_from(verify(True)), planner="gemini", model="gemini-test"
    )
    prompt = requested("subdivide the cube", planner="gemini")
    planner = handlers(model=ScriptedModel(), log=Log(prompt, planned))
    failed, said = await planner.on_executed(without_gates(planned))
    assert isinstance(failed, RunFailed) and failed.failure.error_code == "GATES_FAILED"
    assert isinstance(said, ThreadMessage) and said.text.startswith("Failed (GATES_FAILED)")


async def test_unverified_when_execution_failed_leaves_the_failure_to_speak() -> None:
    planned = await planned_from(verify(True))
    unjudged = without_gates(planned)
    assert unverified(unjudged, planned) is not None
    bad = msgspec.structs.replace(unjudged, failure=failure("TOOL_ERROR", "retry"))
    assert unverified(bad, planned) is None  # the execution's own failure ends the run
    assert unverified(unjudged, None) is None  # no plan: nothing required the gates
