"""Run and action states folded from a run's events (spec 002 §3). Pure: no I/O.

The log is the only source of truth for a run's state (docs/architecture.md). The CLI folds the
events it watches to print a run live and the audit projections apply the same
transitions one event at a time, so the two can never disagree about a state.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from contracts.events import (
    AnyEvent,
    ApprovalRequested,
    Approved,
    Denied,
    Event,
    Executed,
    GatesEvaluated,
    OperationFailed,
    OperationRolledBack,
    OperationSkipped,
    OperationStarted,
    OperationSucceeded,
    Planned,
    PlanningStarted,
    PlanRejected,
    PolicyDecided,
    Replied,
    RunCompleted,
    RunEvent,
    RunFailed,
    RunRequested,
)
from contracts.failures import FailureContract
from contracts.gates import GateEnvelope
from contracts.operations import Operation
from contracts.receipts import (
    ActionState,
    ApprovalAsk,
    AskedOperation,
    Receipt,
    RunResult,
    RunState,
)
from contracts.trusted_code import code_hashes

TERMINAL: frozenset[str] = frozenset({"completed", "failed", "awaiting_confirmation"})


FINAL: frozenset[str] = frozenset({"completed", "failed"})


_E = TypeVar("_E")


def latest(events: Sequence[object], kind: type[_E]) -> _E | None:
    """The last event of ``kind`` in ``events``, or None when there is none."""
    return next((e for e in reversed(events) if isinstance(e, kind)), None)


def run_state_after(state: RunState | None, event: Event) -> RunState | None:
    """The run state once ``event`` happened; events that change nothing keep ``state``.

    A completed or failed run stays so: an operation event that was re-published after a
    reconnect may reach the log after the run's end, and must not reopen it.
    """
    if state in FINAL:
        return state
    match event:
        case RunRequested():
            return "queued"
        case PlanningStarted() | Planned() | PolicyDecided() | Replied():
            return "planning"
        case ApprovalRequested():
            return "awaiting_confirmation"
        case (
            Approved()
            | OperationStarted()
            | OperationSucceeded()
            | OperationFailed()
            | OperationRolledBack()
            | OperationSkipped()
            | Executed()
            | GatesEvaluated()
        ):
            return "executing"
        case PlanRejected() | Denied() | RunFailed():
            return "failed"
        case RunCompleted():
            return "completed"
    return state  # ApprovalResolved (Approved or Denied follows), dead letters


def action_changes(event: Event) -> list[tuple[str, ActionState]]:
    """The (operation_id, new state) pairs ``event`` causes; op_skipped changes nothing."""
    match event:
        case Planned():
            return [(op.operation_id, "planned") for op in event.operation_set.operations]
        case ApprovalRequested():
            return [(op, "awaiting_confirmation") for op in event.operation_ids]
        case Denied():
            return [(op, "rejected") for op in event.operation_ids]
        case OperationStarted():
            return [(event.operation_id, "executing")]
        case OperationSucceeded():
            return [(event.operation_id, "completed")]
        case OperationFailed() | OperationRolledBack():
            return [(event.operation_id, "failed")]
    return []


def action_times(events: Sequence[AnyEvent]) -> dict[str, tuple[float, float]]:
    """When each operation was planned (by the latest plan that holds it) and when an event
    last changed its state: the timestamps spec 002 §9 asks of every action."""
    times: dict[str, tuple[float, float]] = {}
    for event in events:
        for op, _ in action_changes(event):
            fresh = isinstance(event, Planned) or op not in times
            times[op] = (event.at if fresh else times[op][0], event.at)
    return times


def action_states(events: Sequence[AnyEvent]) -> dict[str, ActionState]:
    states: dict[str, ActionState] = {}
    for event in events:
        states.update(action_changes(event))
    return states


def is_terminal(result: RunResult) -> bool:
    """True when nothing more happens without a human: done, failed, or waiting for one."""
    return result.status in TERMINAL


@dataclass
class _Acc:
    requested: RunRequested
    state: RunState | None = None
    planner: str | None = None
    model: str | None = None
    receipts: list[Receipt] = field(default_factory=list)
    # The execution (its Approved event) the receipts belong to, and whether its Executed
    # has given the final list. A repair starts a new execution, and with it a new list;
    # an operation event of a sealed execution is a late re-publish and changes nothing.
    execution: str | None = None
    sealed: bool = False
    failure: FailureContract | None = None
    failure_message: str = ""
    run_failed: bool = False
    summary: str = ""
    blend_path: str | None = None
    scene_hash: str | None = None
    pending: list[str] = field(default_factory=list)
    approval: ApprovalAsk | None = None
    planned: list[Operation] = field(default_factory=list)  # the last plan's operations
    gates: GateEnvelope | None = None
    renders_preview: bool = False

    def add_receipt(self, execution: str | None, receipt: Receipt) -> None:
        if execution != self.execution:
            self.receipts, self.execution, self.sealed = [], execution, False
        if self.sealed:
            return
        self.receipts = [r for r in self.receipts if r.operation_id != receipt.operation_id]
        self.receipts.append(receipt)

    def fail(self, failure: FailureContract, message: str, *, final: bool = False) -> None:
        if self.run_failed and not final:
            return  # RunFailed has the last word over PlanRejected/Denied
        self.failure, self.failure_message, self.run_failed = failure, message, final

    def apply(self, event: AnyEvent) -> None:
        self.state = run_state_after(self.state, event)
        match event:
            case PlanningStarted():
                self.planner = event.planner
            case Replied():
                self.planner, self.model = event.planner, event.model or self.model
            case Planned():
                self.planner, self.model = event.planner, event.model
                self.planned = list(event.operation_set.operations)
            case PlanRejected():
                self.planner = event.planner
                self.model = event.model or self.model  # a model that answered, if any
                self.fail(event.failure, event.message)
            case ApprovalRequested():
                self.pending = list(event.operation_ids)
                self.approval = _ask(event, self.planned)
            case Denied():
                self.fail(event.failure, event.message)
            case OperationSucceeded() | OperationFailed():
                self.add_receipt(event.causation_id, event.receipt)
            case Executed():
                self.receipts, self.sealed = list(event.receipts), True
                self.execution = event.causation_id
                self.blend_path, self.scene_hash = event.blend_path, event.scene_hash
                self.renders_preview = event.renders_preview
            case GatesEvaluated():
                self.gates = event.envelope
            case RunCompleted():
                self.summary = event.summary
                self.blend_path = _newer(event.blend_path, self.blend_path)
                self.scene_hash = _newer(event.scene_hash, self.scene_hash)
                self.renders_preview = event.renders_preview
            case RunFailed():
                self.fail(event.failure, event.message, final=True)

    def result(self) -> RunResult:
        req, status = self.requested, self.state or "queued"
        return RunResult(
            run_id=req.run_id,
            request_id=req.request_id,
            thread_id=req.thread_id,
            scene_id=req.scene_id,
            user=req.user,
            status=status,
            planner=self.planner,
            model=self.model,
            receipts=list(self.receipts),
            failure=self.failure,
            message=self.summary if status == "completed" else self.failure_message,
            blend_path=self.blend_path,
            scene_hash=self.scene_hash,
            pending_operations=list(self.pending) if status == "awaiting_confirmation" else [],
            gates=self.gates,
            approval=self.approval if status == "awaiting_confirmation" else None,
            renders_preview=self.renders_preview and status == "completed",
        )


def _ask(event: ApprovalRequested, planned: Sequence[Operation]) -> ApprovalAsk:
    """The approval as a person is shown it; events older than ``operations`` name only
    operation ids, whose arguments are in the run's last plan."""
    operations = [
        AskedOperation(
            operation_id=op.operation_id, tool=op.tool, safety_level=op.safety_level, args=op.args
        )
        for op in event.operations
    ]
    if not event.operations:
        wanted = set(event.operation_ids)
        operations = [
            AskedOperation(
                operation_id=op.operation_id,
                tool=op.tool_name,
                safety_level=op.safety_level,
                args=op.args,
            )
            for op in planned
            if op.operation_id in wanted
        ]
    return ApprovalAsk(
        approval_id=event.approval_id,
        request_hash=event.request_hash,
        reason=event.reason,
        expires_at=event.expires_at,
        operations=operations,
        code_sha256=code_hashes(operations),
        lead_of=event.lead_of,
    )


def _newer(value: str | None, old: str | None) -> str | None:
    return value if value is not None else old


def fold_run(events: Sequence[AnyEvent]) -> RunResult | None:
    """The run's result so far; events of other runs are ignored. None before RunRequested."""
    requested = next((e for e in events if isinstance(e, RunRequested)), None)
    if requested is None:
        return None
    acc = _Acc(requested=requested)
    for event in events:
        if isinstance(event, RunEvent) and event.run_id == requested.run_id:
            acc.apply(event)
    return acc.result()
