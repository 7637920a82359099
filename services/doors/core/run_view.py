"""One view of a run, built once from its events: what every door answers a run with.

The CLI, the HTTP gateway and the MCP door each answer with a run's state, the approval it
waits on, why it failed, what it committed and what each planned operation came to. Each
used to search the run's events for the last plan or approval and read the fold its own
way; they read this view instead, so what a run says is worked out in one place and an
older event's shape is handled once. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import msgspec

from contracts.events import AnyEvent, ApprovalRequested, Planned, PolicyDecided
from contracts.failures import ErrorCode, FailureContract, RepairStep
from contracts.fold import action_states, action_times, fold_run, latest
from contracts.gates import GateEnvelope
from contracts.geonodes import step_of
from contracts.operations import Operation
from contracts.receipts import (
    ActionState,
    ApprovalAsk,
    AskedOperation,
    Receipt,
    RunResult,
    RunState,
)


def approve_command(run_id: str, code_sha256: Sequence[str]) -> str:
    """The command that approves a run's pending approval, quoting the hash of any trusted
    code (an approval of trusted Python counts only with them)."""
    quoted = "".join(f" --code-sha256 {h}" for h in code_sha256)
    return f"blendmesh approve {run_id}{quoted}"


def reject_command(run_id: str) -> str:
    return f"blendmesh reject {run_id}"


def answer_hash(asked: ApprovalRequested) -> str:
    """The hash a resolution quotes: the policy's, or for events older than it, a stand-in
    over what was asked under which approval id."""
    if asked.request_hash:
        return asked.request_hash
    key = msgspec.json.encode([asked.approval_id, asked.run_id, asked.operation_ids])
    return hashlib.sha256(key).hexdigest()


@dataclass(frozen=True)
class Pending:
    """The approval a run waits on, as a person is shown it (the fold's ``ApprovalAsk``:
    for events older than its operations, the run's last plan fills them in)."""

    run_id: str
    ask: ApprovalAsk
    quote: str  # what a resolution quotes (``answer_hash``)

    @property
    def approval_id(self) -> str:
        return self.ask.approval_id

    @property
    def reason(self) -> str:
        return self.ask.reason

    @property
    def request_hash(self) -> str:
        """The policy's hash of the request; empty for events older than it."""
        return self.ask.request_hash

    @property
    def expires_at(self) -> float | None:
        return self.ask.expires_at

    @property
    def operations(self) -> list[AskedOperation]:
        return self.ask.operations

    @property
    def code_sha256(self) -> list[str]:
        """The hash of each trusted Python step's code: an approval must quote every one."""
        return self.ask.code_sha256

    @property
    def approve_command(self) -> str:
        return approve_command(self.run_id, self.code_sha256)

    @property
    def reject_command(self) -> str:
        return reject_command(self.run_id)


@dataclass(frozen=True)
class Failure:
    """Why a run failed: its spec 000 failure contract and the run's own words."""

    contract: FailureContract
    message: str

    @property
    def code(self) -> ErrorCode:
        return self.contract.error_code

    @property
    def hint(self) -> str:
        return self.contract.retry_hint

    @property
    def recoverable(self) -> bool:
        return self.contract.recoverable

    @property
    def repair(self) -> list[RepairStep]:
        return self.contract.minimal_repair_plan


@dataclass(frozen=True)
class Step:
    """One operation of the run's last plan and what became of it (spec 002 §9's action)."""

    operation: Operation
    state: ActionState
    requires_approval: bool  # the policy asked a person about it
    receipt: Receipt | None  # of the current execution, once it ran or was refused
    planned_at: float | None  # when the plan that holds it was made
    changed_at: float | None  # when an event last changed its state

    @property
    def operation_id(self) -> str:
        return self.operation.operation_id

    @property
    def step_id(self) -> str | None:
        """The Geometry Nodes step (spec 004) the operation was compiled from, if any."""
        return step_of(self.operation.operation_id)


@dataclass(frozen=True)
class RunView:
    """A run as the doors answer it: the fold's result, the last plan's steps, and the
    approval request a resolution answers.

    Built from events (``of``, ``build``) it has everything; built from a folded result
    alone (``of_result``) it has no steps and no request, which is all a door that prints
    the result needs.
    """

    result: RunResult
    steps: tuple[Step, ...] = ()
    # The ApprovalRequested the pending approval stands for: a resolution follows it.
    asked: ApprovalRequested | None = None

    @classmethod
    def of(cls, events: Sequence[AnyEvent]) -> RunView | None:
        """The view of a run's events; None before its RunRequested."""
        result = fold_run(events)
        return None if result is None else cls.build(result, events)

    @classmethod
    def build(cls, result: RunResult, events: Sequence[AnyEvent]) -> RunView:
        """The view of ``result``, folded from ``events``, whose receipts the steps show."""
        planned = latest(events, Planned)
        decided = latest(events, PolicyDecided)
        asks = (
            {d.operation_id for d in decided.decisions if d.mode == "require_approval"}
            if decided is not None
            else set()
        )
        states = action_states(events)
        times = action_times(events)
        receipts = {r.operation_id: r for r in result.receipts}
        steps = tuple(
            Step(
                operation=op,
                state=states.get(op.operation_id, "planned"),
                requires_approval=op.operation_id in asks,
                receipt=receipts.get(op.operation_id),
                planned_at=when[0] if when else None,
                changed_at=when[1] if when else None,
            )
            for op in (planned.operation_set.operations if planned is not None else [])
            for when in [times.get(op.operation_id)]
        )
        waiting = result.status == "awaiting_confirmation"
        asked = latest(events, ApprovalRequested) if waiting else None
        return cls(result=result, steps=steps, asked=asked)

    @classmethod
    def of_result(cls, result: RunResult) -> RunView:
        return cls(result=result)

    @property
    def run_id(self) -> str:
        return self.result.run_id

    @property
    def scene_id(self) -> str:
        return self.result.scene_id

    @property
    def status(self) -> RunState:
        return self.result.status

    @property
    def message(self) -> str:
        """The summary of a completed run, or the reason of a failed one."""
        return self.result.message

    @property
    def receipts(self) -> list[Receipt]:
        return self.result.receipts

    @property
    def succeeded(self) -> int:
        """How many of the receipts say their operation succeeded."""
        return sum(1 for r in self.result.receipts if r.status == "succeeded")

    @property
    def replied(self) -> bool:
        """Completed with nothing run: the planner answered in words (spec 002 §4.5)."""
        return self.result.status == "completed" and not self.result.receipts

    @property
    def described(self) -> bool:
        """Completed by a snapshot: the run's summary is the scene's description."""
        return self.result.status == "completed" and any(
            r.tool_name == "scene.snapshot" for r in self.result.receipts
        )

    @property
    def scene_hash(self) -> str | None:
        """The hash of the revision the run committed, once it committed one."""
        return self.result.scene_hash

    @property
    def committed(self) -> bool:
        """Whether the run committed a revision (a revision's hash is never empty)."""
        return bool(self.result.scene_hash)

    @property
    def gates(self) -> GateEnvelope | None:
        """The guardians' verdict on the committed revision."""
        return self.result.gates

    @property
    def awaited(self) -> list[str]:
        """The operations a person is asked about, while the run waits."""
        return self.result.pending_operations

    @property
    def pending(self) -> Pending | None:
        """The approval the run waits on, when it waits and the fold knows what it asks."""
        ask = self.result.approval
        if self.result.status != "awaiting_confirmation" or ask is None:
            return None
        quote = answer_hash(self.asked) if self.asked is not None else ask.request_hash
        return Pending(run_id=self.result.run_id, ask=ask, quote=quote)

    @property
    def failure(self) -> Failure | None:
        """Why the run failed; None unless it did and its failure contract is known."""
        contract = self.result.failure
        if self.result.status != "failed" or contract is None:
            return None
        return Failure(contract=contract, message=self.result.message)


class Gathered:
    """An ``on_event`` that keeps every event a run's follower hands on, and passes each to
    ``then``: the events ``MeshClient.run`` followed, so a door builds the run's view
    without reading the run again. A resolution's follower hands on only the events after
    it; ``MeshClient.resolve_view`` answers with the view instead."""

    def __init__(self, then: Callable[[AnyEvent], None] | None = None) -> None:
        self.events: list[AnyEvent] = []
        self._then = then

    def __call__(self, event: AnyEvent) -> None:
        self.events.append(event)
        if self._then is not None:
            self._then(event)

    def view(self, result: RunResult) -> RunView:
        """The view of ``result``, folded by the follower from the events gathered."""
        return RunView.build(result, self.events)
