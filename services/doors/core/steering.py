"""Re-runs, forks and bulk replays of a user's own runs (issue 42, ADR 0063). Pure: no I/O.

A re-run from operation N keeps the original's request id, so the executor's journal
(spec 000 §Executor Guarantees 2: a key is user + scene + request_id + operation_id)
reports every operation the original committed as ``skipped_idempotent`` and runs the
rest. It continues from where the original left its scene, so the operations before N must
be ones the original committed and the scene must still be at the revision it left.

A fork is new work: a request id of its own and a first operation, ``scene.revert``, that
puts the scene back at the revision the original started from, so the fork's revision is
built on that parent whatever came after. Both are new runs through the planner and the
policy, never around them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from contracts.cancels import CANCELLED
from contracts.events import AnyEvent, Executed, Planned, RunCompleted, RunFailed, RunRequested
from contracts.operations import Operation, OperationSet, convert_operation_set
from contracts.origins import MAX_OPERATION_INDEX, RunOrigin
from contracts.scene_files import REVERT_TOOL
from services.doors.core.client import ClientError

FORK_BASE = "fork.base"  # the id of a fork's first operation, the revert to its parent
COMMITTED = ("succeeded", "skipped_idempotent")
MAX_REPLAY = 50  # runs one bulk replay may select: a replay is for an incident, not a migration

Verdict = Literal["committed", "runs again"]


class SteerRefused(ClientError):
    """A re-run, fork or replay that cannot be made now; the message says what to do."""


class SteerInvalid(SteerRefused):
    """An argument of a re-run, fork or replay that can never work: an operation out of
    range, a plan that is not an operation set, a filter that selects nothing sensible."""


class NoRun(SteerRefused):
    """No run of the caller's has that id (another user's run answers the same)."""


@dataclass(frozen=True)
class Original:
    """What a re-run or fork reads of the run it starts from: its own events, folded."""

    requested: RunRequested
    planned: Planned | None = None  # its last plan (a model's repair plans again)
    executed: Executed | None = None  # its last execution
    ended: RunCompleted | RunFailed | None = None

    @classmethod
    def of(cls, events: Sequence[AnyEvent]) -> Original | None:
        requested = next((e for e in events if isinstance(e, RunRequested)), None)
        if requested is None:
            return None
        planned = [e for e in events if isinstance(e, Planned)]
        executed = [e for e in events if isinstance(e, Executed)]
        ended = [e for e in events if isinstance(e, RunCompleted | RunFailed)]
        return cls(
            requested,
            planned[-1] if planned else None,
            executed[-1] if executed else None,
            ended[-1] if ended else None,
        )

    @property
    def run_id(self) -> str:
        return self.requested.run_id

    @property
    def cancelled(self) -> bool:
        return isinstance(self.ended, RunFailed) and self.ended.failure.error_code == CANCELLED

    def committed(self) -> set[str]:
        """The operations the original's last execution kept in a revision it committed."""
        done = self.executed
        if done is None or done.blend_path is None:
            return set()
        return {r.operation_id for r in done.receipts if r.status in COMMITTED}


@dataclass(frozen=True)
class Steered:
    """A new run's plan and origin, ready for ``build_request``."""

    plan: dict[str, Any]
    origin: RunOrigin
    scene_id: str
    verdicts: dict[str, Verdict] = field(default_factory=dict)  # per operation, in order


def parent_revision(
    original: Original, history: Sequence[tuple[int, str]], from_op: int = 1
) -> int | None:
    """The revision a fork of ``original`` from operation ``from_op`` starts from: the
    newest, up to the one the run left, whose hash (``history``: revision and hash prefix,
    as the store names them) is the scene that operation met (for 1, the scene the run's
    first operation met). None when no stored revision is: a new scene, a run that never
    executed, or an operation that met a scene no run committed."""
    executed, planned = original.executed, original.planned
    if executed is None or executed.revision is None or planned is None:
        return None
    if from_op == 1:
        met = next((r.scene_hash_before for r in executed.receipts if r.scene_hash_before), None)
    elif from_op <= len(planned.schedule):
        op_id = planned.schedule[from_op - 1]
        met = next(
            (r.scene_hash_before for r in executed.receipts if r.operation_id == op_id), None
        )
    else:
        return None
    if met is None:
        return None
    matching = [n for n, prefix in history if n <= executed.revision and met.startswith(prefix)]
    return max(matching) if matching else None


def ended_with_a_plan(original: Original, verb: str) -> Planned:
    """The original's plan, if a run that ended may be re-run or forked; refused otherwise."""
    run = original.run_id
    if original.ended is None:
        raise SteerRefused(
            f"run {run} has not ended; wait for it, or `blendmesh cancel {run}`, then {verb} it"
        )
    if original.cancelled:
        raise SteerRefused(
            f"run {run} was cancelled, so its change was not wanted and it is not {verb}ed; "
            "ask again with `blendmesh run` if it is wanted now"
        )
    if original.planned is None:
        raise SteerRefused(
            f"run {run} made no plan to {verb} (it ended before planning); "
            "ask again with `blendmesh run`"
        )
    return original.planned


def edited(plan: Any, what: str) -> OperationSet:
    """An edited plan, checked as spec 000's operation set; refused naming what is wrong."""
    try:
        return convert_operation_set(plan)
    except (msgspec.ValidationError, ValueError) as exc:
        raise SteerInvalid(f"{what} is not a valid operation set (spec 000): {exc}") from None


def rerun(
    original: Original,
    from_op: int,
    head_revision: int | None,
    plan: Any = None,
    kind: Literal["rerun", "replay"] = "rerun",
) -> Steered:
    """A re-run of ``original`` from operation ``from_op`` (1-based, in its schedule) on its
    scene, whose head is ``head_revision``; ``plan`` an edited operation set, or None."""
    planned = ended_with_a_plan(original, "re-run")
    schedule, run = planned.schedule, original.run_id
    if not 1 <= from_op <= min(len(schedule), MAX_OPERATION_INDEX):
        raise SteerInvalid(
            f"operation {from_op} is out of range: run {run} has operations 1 to "
            f"{len(schedule)}; `blendmesh runs show {run}` lists them in order"
        )
    ops = {op.operation_id: op for op in planned.operation_set.operations}
    new = ops if plan is None else _ops(edited(plan, "the edited plan"))
    committed = original.committed()
    for index, op_id in enumerate(schedule[: from_op - 1], start=1):
        if new.get(op_id) != ops[op_id]:
            raise SteerInvalid(
                f"the edited plan changes operation {index} ({op_id}), which comes before "
                f"operation {from_op}: a re-run keeps what came before N; re-run from "
                f"{index}, or fork the run"
            )
        if op_id not in committed:
            raise SteerRefused(
                f"operation {index} ({op_id}) of run {run} was not committed, so a re-run "
                f"cannot start after it; re-run from {index}"
            )
    for index, op_id in enumerate(schedule, start=1):
        if op_id in committed and op_id in new and new[op_id] != ops[op_id]:
            raise SteerInvalid(
                f"the edited plan changes operation {index} ({op_id}), which run {run} "
                "committed: its idempotency key holds the committed arguments; fork the run "
                "to apply the change anew"
            )
    left = original.executed.revision if original.executed else None
    if original.executed is not None and head_revision != left:
        raise SteerRefused(
            f"scene {planned.scene_id} moved on since run {run} (its head is revision "
            f"{head_revision}, the run left revision {left}); a re-run continues where the "
            f"run left the scene: `blendmesh runs fork {run}` starts from its parent instead"
        )
    request_id = original.requested.request_id
    body = {"request_id": request_id, "operations": [_builtins(op) for op in new.values()]}
    verdicts: dict[str, Verdict] = {
        op_id: "committed" if op_id in committed else "runs again" for op_id in new
    }
    origin = RunOrigin(run=run, kind=kind, from_op=from_op)
    return Steered(body, origin, planned.scene_id, verdicts)


def fork(
    original: Original,
    started_from: int | None,
    request_id: str,
    plan: Any = None,
    from_op: int = 1,
) -> Steered:
    """A fork of ``original`` from operation ``from_op`` on ``started_from``, the revision
    that operation met (``parent_revision``): a new request (``request_id``) whose first
    operation reverts the scene there, then the plan's operations from ``from_op`` on (or
    the edited ``plan`` whole)."""
    planned = ended_with_a_plan(original, "fork")
    run, schedule = original.run_id, planned.schedule
    if not 1 <= from_op <= min(len(schedule), MAX_OPERATION_INDEX):
        raise SteerInvalid(
            f"operation {from_op} is out of range: run {run} has operations 1 to "
            f"{len(schedule)}; `blendmesh runs show {run}` lists them in order"
        )
    ops = planned.operation_set if plan is None else edited(plan, "the edited plan")
    if started_from is None or started_from < 1:
        if from_op > 1:
            raise SteerRefused(
                f"no stored revision holds the scene operation {from_op} of run {run} met: "
                "revisions are what runs commit, and an operation meets one only when the "
                "run committed just before it (as a run that failed there does); fork from 1"
            )
        raise SteerRefused(
            f"run {run} started from no stored revision (it never executed, or its scene "
            "was new), so there is no parent to fork from; run its plan on a scene with "
            "`blendmesh run --plan FILE`"
        )
    if any(op.operation_id == FORK_BASE for op in ops.operations):
        raise SteerInvalid(
            f"the plan has an operation named {FORK_BASE}, the id a fork gives its revert to "
            "the parent revision; rename that operation"
        )
    kept = (
        set(schedule[from_op - 1 :]) if plan is None else {o.operation_id for o in ops.operations}
    )
    base: dict[str, Any] = {
        "operation_id": FORK_BASE,
        "tool_name": REVERT_TOOL,
        "args": {"revision": started_from},
        "depends_on": [],
        "safety_level": "destructive",
    }
    body = [base]
    for op in ops.operations:
        if op.operation_id not in kept:
            continue
        row = _builtins(op)
        # What came before operation N is in the parent revision already.
        row["depends_on"] = [d for d in row["depends_on"] if d in kept] or [FORK_BASE]
        body.append(row)
    origin = RunOrigin(run=run, kind="fork", from_op=from_op, base_revision=started_from)
    return Steered({"request_id": request_id, "operations": body}, origin, planned.scene_id)


def _ops(operation_set: OperationSet) -> dict[str, Operation]:
    return {op.operation_id: op for op in operation_set.operations}


def _builtins(op: Operation) -> dict[str, Any]:
    out: dict[str, Any] = msgspec.to_builtins(op)
    return out
