"""The repair loop's policy (spec 002 §4): how often, and what goes back to the model.

Every model answer is one iteration, whether it fails validation or execution; a run gets
at most ``MAX_ITERATIONS``. A failure goes back only when its contract says a new plan can
fix it (``recoverable``). Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import msgspec

from contracts.events import AnyEvent, Executed, Planned
from contracts.failures import FailureContract, failure
from contracts.gates import GateEnvelope
from contracts.geonodes import step_of
from contracts.operations import Operation
from contracts.receipts import Receipt
from contracts.scenes import SceneSummary
from services.planner.gates import envelope_text
from services.planner.graph import PlanInvalid
from services.planner.model.port import Turn
from services.planner.model.prompt import scene_section

MAX_ITERATIONS = 3
ANSWER_EXCERPT = 16_000  # characters of an earlier answer sent back with its failure

# "continue": the answer ran and passed its gates, but said it was not done (004 ``done``).
Stage = Literal["validation", "execution", "gates", "continue"]


@dataclass(frozen=True)
class Attempt:
    """One earlier answer that failed, and why; or one that ran but was not done (004)."""

    answer: str
    failure: FailureContract | None  # None when the answer succeeded ("continue")
    message: str
    stage: Stage = "validation"
    receipts: tuple[Receipt, ...] = ()  # what execution did, for an execution failure
    scene: SceneSummary | None = None  # the scene after a failed execution
    scene_id: str = ""
    committed: tuple[str, ...] = ()  # ids of operations this run has applied so far
    gates: GateEnvelope | None = None  # the verification gates that failed (004 §8)


def may_continue(iteration: int) -> bool:
    """Whether an answer that succeeded but was not ``done`` (004) gets a next one."""
    return iteration < MAX_ITERATIONS


def may_repair(iteration: int, failure: FailureContract) -> bool:
    """Whether the answer of ``iteration`` that failed so goes back for another try."""
    return failure.recoverable and iteration < MAX_ITERATIONS


def repair_turns(attempts: Sequence[Attempt]) -> list[Turn]:
    """Each failed answer as the model's turn, then the failure as the user's turn."""
    turns: list[Turn] = []
    for attempt in attempts:
        turns.append(Turn("model", attempt.answer[:ANSWER_EXCERPT]))
        turns.append(Turn("user", _failure_text(attempt)))
    return turns


def _continue_text(attempt: Attempt) -> str:
    steps = sorted({s for i in attempt.committed if (s := step_of(i)) is not None})
    gates = f" Gate envelope: {envelope_text(attempt.gates)}" if attempt.gates else ""
    return (
        "blendmesh ran that answer and saved the scene; it passed its verification gates."
        f"{gates}\nYou said done=false, so the request is not finished yet.\n"
        f"{scene_section(attempt.scene_id, attempt.scene)}\n"
        "Answer with what is still left of the request, on the scene as it is now, and "
        "done=true when nothing is left after it. Give every step and operation a new id"
        + (f" (taken steps: {', '.join(steps)})" if steps else "")
        + (f" (taken operations: {', '.join(attempt.committed)})." if attempt.committed else ".")
    )


def _failure_text(attempt: Attempt) -> str:
    if attempt.stage == "continue":
        return _continue_text(attempt)
    contract = json.dumps(msgspec.to_builtins(attempt.failure), separators=(",", ":"))
    if attempt.stage == "validation":
        return (
            f"blendmesh rejected that operation set before running it: {attempt.message}\n"
            f"Failure contract: {contract}\n"
            "Answer with a complete, corrected operation set for the same request."
        )
    done = "; ".join(f"{r.operation_id} {r.tool_name}: {r.status}" for r in attempt.receipts)
    if attempt.stage == "gates" and attempt.gates is not None:
        return (
            "blendmesh ran that operation set and saved the scene, but the scene failed its "
            f"verification gates. Gate envelope: {envelope_text(attempt.gates)}\n"
            f"{scene_section(attempt.scene_id, attempt.scene)}\n"
            "Answer with an operation set that fixes what the gates report, on the scene as "
            "it is now; every operation needs a new id"
            + (f" (taken: {', '.join(attempt.committed)})." if attempt.committed else ".")
        )
    return (
        f"blendmesh ran that operation set and it failed: {attempt.message}\n"
        f"Results: {done or 'nothing ran'}\n"
        f"Failure contract: {contract}\n"
        "Operations that succeeded are applied and saved; failed ones were rolled back. "
        f"{scene_section(attempt.scene_id, attempt.scene)}\n"
        "Answer with an operation set that does only what is still left of the request, "
        "on the scene as it is now."
        + (
            f" The ids {', '.join(attempt.committed)} are taken by operations already applied: "
            "give every new operation a new id."
            if attempt.committed
            else ""
        )
    )


def summary_of(outcome: str, applied: Sequence[Operation] = ()) -> str:
    """The assistant's thread message for a finished run: the outcome and what it applied."""
    calls = [
        f"{op.operation_id} {op.tool_name} {json.dumps(op.args, separators=(',', ':'))}"
        for op in applied
    ]
    text = outcome + (f" Applied: {'; '.join(calls)}." if calls else "")
    return text[:2000]


def committed_operations(events: Sequence[AnyEvent]) -> dict[str, Operation]:
    """The operations a run's executions applied so far, by id, from its events."""
    committed: dict[str, Operation] = {}
    current: dict[str, Operation] = {}
    for event in events:
        if isinstance(event, Planned):
            current = {op.operation_id: op for op in event.operation_set.operations}
        elif isinstance(event, Executed):
            for receipt in event.receipts:
                op = current.get(receipt.operation_id)
                if op is not None and receipt.status in ("succeeded", "skipped_idempotent"):
                    committed[op.operation_id] = op
    return committed


def check_ids(operations: Sequence[Operation], committed: dict[str, Operation]) -> None:
    """Refuse a repair plan that gives an applied operation's id to a different call.

    The executor journals operations by request and operation id, so such a plan would
    fail as IDEMPOTENCY_CONFLICT after a trip through policy and execution; caught here,
    it goes straight back to the model. Repeating an applied call exactly is allowed: the
    executor reports it as done without running it again.
    """
    reused = [
        op.operation_id
        for op in operations
        if (old := committed.get(op.operation_id)) is not None
        and (old.tool_name, old.args) != (op.tool_name, op.args)
    ]
    if reused:
        ids = ", ".join(reused)
        raise PlanInvalid(
            failure(
                "IDEMPOTENCY_CONFLICT",
                f"{ids} already name operations this run applied; give new operations new ids",
                repair=[(i, "replace_args") for i in reused],
            ),
            f"the plan reuses the ids of applied operations for other calls: {ids}",
        )
