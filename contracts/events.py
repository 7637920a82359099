"""The events of one run (docs/architecture.md), each a fact in the immutable log.

Every run event carries the correlation ids of spec 000 (``request_id`` is the
gemini_request_id) plus its own id and the id of the event that caused it. Event ids are
derived deterministically from the cause, so a handler that runs again after a crash
publishes the same ids and JetStream's duplicate window drops the copies.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar

import msgspec

from contracts.allowlist import AllowlistEntry
from contracts.event_base import Event as Event
from contracts.event_base import RunEvent as RunEvent
from contracts.event_base import derive_event_id as derive_event_id
from contracts.failures import FailureContract
from contracts.focus import Focus
from contracts.gates import GateEnvelope
from contracts.operations import OperationSet, SafetyLevel
from contracts.origins import RunOrigin
from contracts.receipts import Receipt
from contracts.resolutions import CodeHash, Resolution
from contracts.reviews import RevisionReviewed
from contracts.session import BUS, DeterminismRequest, HostProfile

_E = TypeVar("_E", bound="RunEvent")

RollbackBoundary = Literal["operation", "run"]


class RunRequested(RunEvent, frozen=True, kw_only=True, tag="run.requested"):
    """A client asks for a change: a prompt to plan, or a plan to run as written."""

    scene_id: str
    prompt: str | None = None
    plan: Any = None  # raw JSON, validated by the planner so a bad plan is a PlanRejected
    planner: str = "rules"
    pre_approved: bool = False  # the requesting user approves destructive operations up front
    # "operation": a failure undoes only the failed operation; "run": the whole run.
    rollback_boundary: RollbackBoundary = "operation"
    # The door the request came through (spec 001 host profile); the executor negotiates
    # it with its Blender's profile. A request from before the field came over the bus.
    host: HostProfile = msgspec.field(default_factory=lambda: BUS)
    # "required": refuse a nondeterministic tool (001 nondeterministic_refused).
    determinism: DeterminismRequest = "any"
    focus: Focus | None = None  # the open session's selection, from the Blender add-on
    # The run this one re-runs or forks (ADR 0063); None: a fresh request.
    origin: RunOrigin | None = None


class PlanningStarted(RunEvent, frozen=True, kw_only=True, tag="run.planning"):
    """A model planner took the request and is asking its model (spec 002 §4.3): the run
    shows ``planning`` while the model thinks, not ``queued``. Published before the call."""

    planner: str


class Replied(RunEvent, frozen=True, kw_only=True, tag="run.replied"):
    """The planner answered in words instead of a plan (spec 002 §4.5: no tool call): the
    request was a question, or needs no change (a spec 004 answer with no steps and
    ``done``). ``run.completed`` follows with the same text as its summary; nothing runs."""

    planner: str
    text: str
    model: str | None = None


class PlanRejected(RunEvent, frozen=True, kw_only=True, tag="run.plan_rejected"):
    """The planner could not make a valid plan; the contract says how to ask again."""

    planner: str
    failure: FailureContract
    message: str
    model: str | None = None  # the model whose last answer was rejected, if one answered


class Planned(RunEvent, frozen=True, kw_only=True, tag="run.planned"):
    """A valid plan in execution order, checked against the catalog it will run on."""

    scene_id: str
    planner: str
    operation_set: OperationSet
    schedule: list[str]  # operation ids in execution order
    catalog_version: str
    model: str | None = None
    iteration: int = 1
    pre_approved: bool = False
    rollback_boundary: RollbackBoundary = "operation"
    # A spec 004 response's ``done``: False means a model planner has more to do after
    # this plan runs and passes its gates; other planners complete the run anyway.
    done: bool = True
    # A spec 004 response's ``meta.requires_gate_verification``: the run completes only
    # once the guardians judged its revision and passed it (004 §7); an execution no gates
    # can judge fails GATES_FAILED. False waives nothing: the mesh's own gates still run.
    requires_gate_verification: bool = False
    # Who planned it (issue 42): the planner's blendmesh release and the Blender the
    # catalog came from. ``catalog_version`` above is the pin an executor honours.
    blendmesh_version: str = ""
    blender_version: str = ""


Mode = Literal["allow", "require_approval", "deny"]


class OperationDecision(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The policy's verdict on one operation (spec 002 §6)."""

    operation_id: str
    tool_name: str
    safety_level: SafetyLevel
    mode: Mode
    reason: str
    policy_ids: list[str] = []


class PolicyDecided(RunEvent, frozen=True, kw_only=True, tag="run.policy_decided"):
    """The policy's verdict on every operation of a plan, naming the rules that decided."""

    decisions: list[OperationDecision]
    policy_set: str  # identifies the rules that decided
    policy_set_hash: str = ""  # "sha256:<hex>" of the policy files that decided


class PendingOperation(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One operation a person is asked to approve, exactly as it would run."""

    operation_id: str
    tool: str
    safety_level: SafetyLevel
    args: dict[str, Any] = {}


class ApprovalRequested(RunEvent, frozen=True, kw_only=True, tag="run.approval_requested"):
    """The run waits for a person to approve these operations, exactly as they would run."""

    approval_id: str
    operation_ids: list[str]
    reason: str
    # sha256 of the canonical JSON of ``operations``; a resolution must quote it.
    request_hash: str = ""
    operations: list[PendingOperation] = []
    expires_at: float | None = None  # seconds since the epoch; then the run fails


class ApprovalResolved(RunEvent, frozen=True, kw_only=True, tag="run.approval_resolved"):
    """A person's answer to an approval; it counts only if it quotes the request's hash."""

    approval_id: str
    decision: Resolution
    resolved_by: str
    request_hash: str = ""  # must match the pending ApprovalRequested.request_hash
    # The "sha256:<hex>" of every trusted Python step's code the person read and approved;
    # an approval of python.trusted code counts only if it quotes each one (issue 12).
    code_sha256: Annotated[list[CodeHash], msgspec.Meta(max_length=500)] = []


class Approved(RunEvent, frozen=True, kw_only=True, tag="run.approved"):
    """The exact operations the executor may run; it runs nothing else."""

    scene_id: str
    operation_set: OperationSet
    schedule: list[str]
    approved_by: str  # "policy" or the user who approved
    rollback_boundary: RollbackBoundary = "operation"
    # The plan's catalog: only an executor serving it runs these operations (ADR 0053).
    # Empty in approvals from before the pin: any executor takes those.
    catalog_version: str = ""


class Denied(RunEvent, frozen=True, kw_only=True, tag="run.denied"):
    """The policy or a person refused operations of the plan, so the run does not execute."""

    failure: FailureContract
    message: str
    operation_ids: list[str]


class OperationStarted(RunEvent, frozen=True, kw_only=True, tag="run.op_started"):
    """The executor is about to call a tool; the hash shows the scene it starts from."""

    operation_id: str
    tool_name: str
    mcp_call_id: str
    scene_hash_before: str


class OperationSucceeded(RunEvent, frozen=True, kw_only=True, tag="run.op_succeeded"):
    """A tool call took effect; its receipt is the audit record of the change."""

    operation_id: str
    mcp_call_id: str
    blender_mutation_id: str | None
    receipt: Receipt


class OperationFailed(RunEvent, frozen=True, kw_only=True, tag="run.op_failed"):
    """A tool call failed; the failure contract says what a repair plan should change."""

    operation_id: str
    mcp_call_id: str
    receipt: Receipt
    failure: FailureContract


class OperationRolledBack(RunEvent, frozen=True, kw_only=True, tag="run.op_rolled_back"):
    """A failed operation's changes were undone; ``scene_hash`` is the scene after."""

    operation_id: str
    mcp_call_id: str
    method: Literal["checkpoint", "compensation", "none"]
    scene_hash: str


class OperationSkipped(RunEvent, frozen=True, kw_only=True, tag="run.op_skipped"):
    """An operation was not run because an earlier one in the schedule failed."""

    operation_id: str
    reason: str


class Executed(RunEvent, frozen=True, kw_only=True, tag="run.executed"):
    """The executor is done with an approved plan: every receipt and the scene it left."""

    scene_id: str
    receipts: list[Receipt]
    scene_hash: str
    blend_path: str | None
    failure: FailureContract | None = None
    message: str = ""
    revision: int | None = None  # the scene revision the run committed, if it committed one
    inspection: str | None = None  # the object holding that revision's inspection artifact
    # A picture of that revision is being rendered (after this event); False: none will
    # come, so a door that shows one does not wait for it.
    renders_preview: bool = False
    # What executed it (issue 42): the executor's blendmesh release, the catalog it
    # serves and its Blender's version.
    blendmesh_version: str = ""
    catalog_version: str = ""
    blender_version: str = ""


class GatesEvaluated(RunEvent, frozen=True, kw_only=True, tag="run.gates_evaluated"):
    """The guardians' verdict on the revision a run committed (spec 003 output and the
    004 §8 envelope). The planner completes the run only when ``envelope.success``."""

    scene_id: str
    revision: int
    guardians: list[str]  # the guardian ids that ran, in the configured order
    result: str  # run_guardians' output as JSON, exactly as the orchestrator returned it
    envelope: GateEnvelope
    config: str = ""  # which gates configuration chose the guardians: "<file>@sha256:<hex>"


class CancelRequested(RunEvent, frozen=True, kw_only=True, tag="run.cancel_requested"):
    """A person asks to stop the run. A run the executor has not started ends at once; an
    executing one stops before its next operation and is rolled back whole, so the scene
    stays at the revision it started from. A door writes it, having checked that the
    person is the run's user or an approver, as it checks who resolves an approval."""

    cancelled_by: str
    reason: Annotated[str, msgspec.Meta(max_length=500)] = ""


class RunCompleted(RunEvent, frozen=True, kw_only=True, tag="run.completed"):
    """The run ended with its plan applied and the scene saved.

    It carries the run's result whole (docs/bus.md), so a client that hears only this
    event knows what was done: the receipts, the revision committed and its gates. Events
    written before these fields existed decode with their defaults.
    """

    summary: str
    blend_path: str | None
    scene_hash: str | None
    scene_id: str | None = None
    receipts: list[Receipt] = []
    revision: int | None = None  # the scene revision the run committed, if it committed one
    gates: GateEnvelope | None = None  # the guardians' verdict on that revision
    renders_preview: bool = False  # as Executed says: a picture of that revision will come


class RunFailed(RunEvent, frozen=True, kw_only=True, tag="run.failed"):
    """The run ended without its change; the failure contract says what to do next."""

    failure: FailureContract
    message: str


Role = Literal["user", "assistant"]


class ThreadMessage(Event, frozen=True, kw_only=True, tag="thread.message"):
    """One message of a conversation thread: a run's request, or what became of it.

    A model planner reads a thread's recent messages back from the log as the
    conversation history of its next run (spec 002 §4), so threads need no other store.
    """

    thread_id: str
    run_id: str
    role: Role
    text: str


class AllowlistRevoked(Event, frozen=True, kw_only=True, tag="allowlist.revoked"):
    """A standing approval was withdrawn: its user is asked again from now on. The log keeps
    the revocation as it keeps the approval that granted it, so the allowlist's history is
    in immutable entries (spec 002 §9), not only in a KV bucket that forgets deletes."""

    entry: AllowlistEntry  # the entry as it was when revoked
    revoked_by: str


class DeadLettered(Event, frozen=True, kw_only=True, tag="deadletter"):
    """A message no handler could process; kept so nothing is dropped silently."""

    consumer: str
    subject: str
    stream_seq: int
    deliveries: int
    reason: str
    payload: str  # the original bytes, decoded as UTF-8 with replacement, truncated


AnyEvent = (
    RunRequested
    | PlanningStarted
    | Replied
    | PlanRejected
    | Planned
    | PolicyDecided
    | ApprovalRequested
    | ApprovalResolved
    | Approved
    | Denied
    | OperationStarted
    | OperationSucceeded
    | OperationFailed
    | OperationRolledBack
    | OperationSkipped
    | Executed
    | GatesEvaluated
    | CancelRequested
    | RunCompleted
    | RunFailed
    | DeadLettered
    | ThreadMessage
    | AllowlistRevoked
    | RevisionReviewed
)

_decoder = msgspec.json.Decoder(AnyEvent)
_encoder = msgspec.json.Encoder()


def decode_event(data: bytes) -> AnyEvent:
    """Decode one event, raising ``msgspec.ValidationError``/``DecodeError`` on bad input."""
    try:
        return _decoder.decode(data)
    except RecursionError:  # JSON nested thousands deep: bad input like any other
        raise msgspec.DecodeError("JSON is malformed: nested too deeply to decode") from None


def encode_event(event: Event) -> bytes:
    return _encoder.encode(event)


def event_kind(event: Event) -> str:
    """The event's tag, e.g. ``run.op_started``."""
    return type(event).__struct_config__.tag  # type: ignore[return-value]


def follow(cause: RunEvent, kind: type[_E], at: float, index: int = 0, **fields: Any) -> _E:
    """Build the event ``cause`` leads to, carrying its correlation ids forward.

    The id is derived from the cause, the kind and ``index``, so a handler that runs
    again for the same cause produces the same ids and duplicates are dropped.
    """
    tag = kind.__struct_config__.tag
    return kind(
        event_id=derive_event_id(cause.event_id, str(tag), index),
        at=at,
        run_id=cause.run_id,
        request_id=cause.request_id,
        thread_id=cause.thread_id,
        user=cause.user,
        causation_id=cause.event_id,
        **fields,
    )
