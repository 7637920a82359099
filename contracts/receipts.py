"""Execution receipts (spec 000 §Executor Guarantees) and the final result of a run."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from contracts.failures import FailureContract
from contracts.gates import GateEnvelope
from contracts.operations import SafetyLevel
from contracts.tools import DeterminismClass

ReceiptStatus = Literal["succeeded", "failed", "rolled_back", "skipped_idempotent", "skipped"]
RunState = Literal[
    "queued", "planning", "awaiting_confirmation", "executing", "completed", "failed"
]
ActionState = Literal[
    "planned", "awaiting_confirmation", "executing", "completed", "failed", "rejected"
]


class Receipt(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What happened to one operation, with the hashes that let a reader check it."""

    operation_id: str
    tool_name: str
    safety_level: SafetyLevel
    status: ReceiptStatus
    mcp_call_id: str | None = None
    blender_mutation_id: str | None = None
    scene_hash_before: str | None = None
    scene_hash_after: str | None = None
    duration_ms: float = 0.0
    error_code: str | None = None  # the spec 001 ToolResult code when the tool failed
    # 001 §Determinism Requirements: the tool's class (what its ToolResult said, else
    # what the catalog declares) and, for a seeded tool, the seed it ran with.
    determinism_class: DeterminismClass | None = None
    seed: int | None = None
    message: str = ""
    result: dict[str, Any] | None = None


class AskedOperation(msgspec.Struct, frozen=True, kw_only=True):
    """One operation a waiting run asks a person to approve, exactly as it would run."""

    operation_id: str
    tool: str
    safety_level: SafetyLevel
    args: dict[str, Any] = {}


class ApprovalAsk(msgspec.Struct, frozen=True, kw_only=True):
    """The approval a run waits on, as a person is shown it.

    ``code_sha256`` lists the hash of every trusted Python step's code among the
    operations (contracts.trusted_code): an approval counts only if it quotes them.
    """

    approval_id: str
    request_hash: str
    reason: str
    expires_at: float | None = None
    operations: list[AskedOperation] = []
    code_sha256: list[str] = []
    lead_of: str | None = None  # the project whose lead the approval waits for


class RunResult(msgspec.Struct, frozen=True, kw_only=True):
    """The final view of one run, as ``blendmesh run --json`` prints it."""

    run_id: str
    request_id: str
    thread_id: str
    scene_id: str
    user: str
    status: RunState
    planner: str | None = None
    model: str | None = None
    receipts: list[Receipt] = []
    failure: FailureContract | None = None
    message: str = ""
    blend_path: str | None = None
    scene_hash: str | None = None
    pending_operations: list[str] = []
    gates: GateEnvelope | None = None  # the guardians' verdict on the committed revision
    approval: ApprovalAsk | None = None  # what the person is asked, while the run waits
    # The executor renders a picture of the revision committed: a door may wait for it.
    renders_preview: bool = False
