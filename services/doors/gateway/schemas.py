"""The JSON the gateway speaks (camelCase, spec 002), mapped explicitly from the contracts.

Pydantic models here exist for the HTTP edge and its OpenAPI document only; the mesh
speaks msgspec contracts. Each ``*_out`` function is the one place a contract becomes
an answer, so a renamed contract field breaks here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

import msgspec
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator
from pydantic.alias_generators import to_camel
from pydantic.json_schema import SkipJsonSchema

from contracts.events import AnyEvent
from contracts.focus import MAX_FOCUS
from contracts.python_steps import CODE_SHA256_PATTERN
from contracts.queries import AuditRecord, RunRow, TimelineEntry
from contracts.receipts import ActionState, RunResult, RunState
from contracts.request_limits import MAX_PROMPT
from contracts.resolutions import Resolution
from contracts.tools import DeterminismClass
from services.doors.core.run_view import Pending, RunView
from services.doors.gateway.errors import FAILURE_TYPE, ApiError, type_name

# The subject-safe ids of contracts/subjects.py: they become NATS subject tokens.
Token = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,128}$")]


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


# -- requests --------------------------------------------------------------------------


FocusName = Annotated[str, StringConstraints(min_length=1, max_length=63)]


class FocusBody(_Model):
    """The open session's selection when the person asked (the Blender add-on sends it)."""

    selected: list[FocusName] = Field(
        default_factory=list, max_length=MAX_FOCUS, description="the selected objects' names"
    )
    active: FocusName | None = Field(default=None, description="the active object's name")


class RunBody(_Model):
    """A request in words (``prompt``) or a hand-written plan (``plan``): one of them.

    A plan is a spec 000 operation set or a spec 004 Geometry Nodes response; the planner
    tells them apart by shape.
    """

    model_config = ConfigDict(
        json_schema_extra={"oneOf": [{"required": ["prompt"]}, {"required": ["plan"]}]}
    )

    prompt: (
        Annotated[str, StringConstraints(min_length=1, max_length=MAX_PROMPT)]
        | SkipJsonSchema[None]
    ) = None
    plan: dict[str, Any] | SkipJsonSchema[None] = None
    thread_id: Token | None = None
    scene_id: Token = "default"
    rollback: Literal["operation", "run"] = "operation"
    determinism: Literal["any", "required"] = Field(
        default="any",
        description="required: refuse the run (nondeterministic_refused) if any tool of its "
        "plan cannot give a reproducible result (spec 001)",
    )
    focus: FocusBody | None = Field(
        default=None,
        description='What is selected in the open session: the planner reads "it" and '
        '"this" as the active object, "the selected ones" as the selection',
    )
    exported_file: Literal["adopt", "discard"] | None = Field(
        default=None,
        description="When the scene's exported .blend was changed since blendmesh wrote it "
        "(else 409): adopt imports it as a new revision first (that import waits for "
        "approval; send the request again once it is approved), discard keeps a copy "
        "beside it and lets the run replace it",
    )

    @model_validator(mode="after")
    def _prompt_or_plan(self) -> RunBody:
        given = {"prompt", "plan"} & self.model_fields_set
        if len(given) != 1 or (self.prompt is None and self.plan is None):
            raise ValueError("give either prompt or plan")
        return self


CodeHash = Annotated[str, StringConstraints(pattern=CODE_SHA256_PATTERN)]
MAX_QUOTED_CODE = 500  # as many as an approval_resolved event holds


class ResolveBody(_Model):
    approval_id: Token
    decision: Resolution
    request_hash: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    code_sha256: list[CodeHash] = Field(
        default_factory=list,
        max_length=MAX_QUOTED_CODE,
        description="The codeSha256 of the pending approval: the hash of every trusted "
        "Python step's code the person read. An approval without them is refused (409).",
    )


# -- answers ---------------------------------------------------------------------------


class Action(_Model):
    operation_id: str
    tool: str
    status: ActionState
    requires_approval: bool
    step_id: str | None = Field(
        default=None,
        description="The step of a Geometry Nodes response (spec 004) the operation was "
        "compiled from",
    )
    determinism_class: DeterminismClass | None = Field(
        default=None,
        description="How repeatable the operation's tool is (spec 001), once it has a receipt",
    )
    seed: int | None = Field(default=None, description="The seed a seeded tool ran with")
    error_code: str | None = Field(
        default=None,
        description="The spec 001 ToolResult code of an operation that failed or was refused "
        "(e.g. nondeterministic_refused)",
    )
    created_at: datetime | None = Field(
        default=None, description="When the plan that holds the operation was made (UTC)"
    )
    updated_at: datetime | None = Field(
        default=None, description="When an event last changed the operation's status (UTC)"
    )


class RepairStepOut(_Model):
    operation_id: str
    action: str


class Failure(_Model):
    """The spec 000 failure contract, plus the spec 002 class it belongs to."""

    type: str
    error_code: str
    recoverable: bool
    retry_hint: str
    minimal_repair_plan: list[RepairStepOut]


class Gates(_Model):
    success: bool
    failed_gates: list[str]
    messages: list[str]


class RunResponse(_Model):
    ok: bool
    run_id: str
    thread_id: str
    status: RunState
    summary: str
    actions: list[Action]
    failure: Failure | None
    scene_path: str | None = Field(description="Where to GET the scene's .blend, once committed")
    gates: Gates | None = Field(
        default=None,
        description="The verification gates' verdict on the committed scene (spec 004 §8)",
    )


class PendingOperation(_Model):
    operation_id: str
    tool: str
    safety_level: str
    args: dict[str, Any]


class PendingApproval(_Model):
    approval_id: str
    run_id: str
    request_hash: str
    reason: str
    expires_at: datetime | None
    operations: list[PendingOperation]
    code_sha256: list[str] = Field(
        description="The sha256 of each python.trusted operation's code (its args.code): "
        "a resolution that approves must quote every one"
    )
    lead_of: str | None = Field(
        default=None,
        description="The project whose lead (or supervisor) must approve: the run's user "
        "is an artist there, and its own approval does not count",
    )
    user: str | None = Field(default=None, description="Whose run waits")


class PendingApprovals(_Model):
    approvals: list[PendingApproval]


class RunSummary(_Model):
    run_id: str
    prompt: str | None = Field(
        default=None, description="The request in words; none for a plan or an import"
    )
    request: str | None = Field(
        default=None,
        description="What the run was, in words: its prompt, or what a run made without "
        "words does ('import a .blend (76.7 MB)', 'revert to revision 3'); none for a run "
        "listed before the mesh kept it",
    )
    status: RunState
    scene_id: str | None
    thread_id: str
    created_at: datetime
    updated_at: datetime
    error_code: str | None


class RunList(_Model):
    runs: list[RunSummary]


class TimelineItem(_Model):
    seq: int
    type: str
    at: datetime
    detail: str
    facts: dict[str, Any] = Field(
        default_factory=dict,
        description="what the event says, as data: keys as in the event (snake_case)",
    )


class AuditRecordOut(_Model):
    """The spec 000 minimum audit record."""

    seq: int
    timestamp: datetime
    request_id: str
    operation_id: str
    mcp_call_id: str | None
    blender_mutation_id: str | None
    tool_name: str | None
    safety_level: str | None
    status: str
    scene_hash_before: str | None
    scene_hash_after: str | None


class AuditResponse(_Model):
    records: list[AuditRecordOut]


# -- mapping ---------------------------------------------------------------------------


def _when(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def scene_path(scene_id: str) -> str:
    return f"/api/scenes/{scene_id}.blend"


def run_response(view: RunView) -> RunResponse:
    """A run's answer: its steps are its actions, its failure the spec 002 class."""
    actions = [
        Action(
            operation_id=step.operation_id,
            tool=step.operation.tool_name,
            status=step.state,
            requires_approval=step.requires_approval,
            step_id=step.step_id,
            determinism_class=step.receipt.determinism_class if step.receipt else None,
            seed=step.receipt.seed if step.receipt else None,
            error_code=step.receipt.error_code if step.receipt else None,
            created_at=_when(step.planned_at) if step.planned_at is not None else None,
            updated_at=_when(step.changed_at) if step.changed_at is not None else None,
        )
        for step in view.steps
    ]
    failure = None
    if (failed := view.failure) is not None:
        kind: type[ApiError] = FAILURE_TYPE.get(failed.code, ApiError)
        failure = Failure(
            type=type_name(kind),
            error_code=failed.code,
            recoverable=failed.recoverable,
            retry_hint=failed.hint,
            minimal_repair_plan=[
                RepairStepOut(operation_id=s.operation_id, action=s.action) for s in failed.repair
            ],
        )
    summary = view.message
    if view.status == "awaiting_confirmation":
        summary = f"waiting for approval of {', '.join(view.awaited)}"
    gates = view.gates
    return RunResponse(
        ok=view.status != "failed",
        run_id=view.run_id,
        thread_id=view.result.thread_id,
        status=view.status,
        summary=summary,
        actions=actions,
        failure=failure,
        scene_path=scene_path(view.scene_id) if view.committed else None,
        gates=Gates(
            success=gates.success,
            failed_gates=list(gates.failed_gates),
            messages=list(gates.messages),
        )
        if gates is not None
        else None,
    )


def run_out(result: RunResult, events: Sequence[AnyEvent]) -> RunResponse:
    """A run's answer from its folded result and the events it was folded from."""
    return run_response(RunView.build(result, events))


def pending_out(pending: Pending) -> PendingApproval:
    """The approval a run waits on, with the hash a resolution quotes."""
    expires_at = pending.expires_at
    return PendingApproval(
        approval_id=pending.approval_id,
        run_id=pending.run_id,
        request_hash=pending.quote,
        reason=pending.reason,
        expires_at=_when(expires_at) if isinstance(expires_at, int | float) else None,
        operations=[
            PendingOperation(
                operation_id=op.operation_id,
                tool=op.tool,
                safety_level=op.safety_level,
                args=msgspec.to_builtins(op.args),
            )
            for op in pending.operations
        ],
        code_sha256=pending.code_sha256,
        lead_of=pending.ask.lead_of,
    )


def summary_out(row: RunRow) -> RunSummary:
    return RunSummary(
        run_id=row.run_id,
        prompt=row.prompt,
        request=row.prompt if row.prompt is not None else row.plan_words,
        status=row.state or "queued",
        scene_id=row.scene_id,
        thread_id=row.thread_id,
        created_at=_when(row.created_at),
        updated_at=_when(row.updated_at),
        error_code=row.error_code,
    )


def timeline_out(entry: TimelineEntry) -> TimelineItem:
    return TimelineItem(
        seq=entry.stream_seq,
        type=entry.type,
        at=_when(entry.at),
        detail=entry.detail,
        facts=entry.facts,
    )


def audit_out(record: AuditRecord) -> AuditRecordOut:
    return AuditRecordOut(
        seq=record.stream_seq,
        timestamp=_when(record.timestamp),
        request_id=record.request_id,
        operation_id=record.operation_id,
        mcp_call_id=record.mcp_call_id,
        blender_mutation_id=record.blender_mutation_id,
        tool_name=record.tool_name,
        safety_level=record.safety_level,
        status=record.status,
        scene_hash_before=record.scene_hash_before,
        scene_hash_after=record.scene_hash_after,
    )
