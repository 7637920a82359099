"""The run timeline the HTTP run detail answers with (issue 42), mapped explicitly from
the doors' one layout of it (``services/doors/core/timeline.py``)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from contracts.queries import RunDetail
from services.doors.core import timeline
from services.doors.gateway.schemas import RunSummary, TimelineItem, _Model


class VersionsOut(_Model):
    """The code that planned or executed a run ("" where the event predates the field)."""

    blendmesh_version: str | None
    catalog_version: str | None
    blender_version: str | None


class RunVersions(_Model):
    planned: VersionsOut | None = Field(description="the last plan's; none before one")
    executed: VersionsOut | None = Field(description="the last execution's; none if none ran")


class OperationOut(_Model):
    """One operation of the run's last plan and what became of it."""

    operation_id: str
    tool: str | None = None
    safety_level: str | None = None
    args: dict[str, Any] | None = Field(default=None, description="none when cut to an excerpt")
    args_excerpt: str | None = Field(default=None, description="the start of long arguments")
    decision: str | None = Field(default=None, description="allow | require_approval | deny")
    policy: list[str] = Field(default_factory=list, description="the deciding policy ids")
    approved_by: str | None = Field(default=None, description='"policy", a person, or rejected')
    status: str | None = Field(default=None, description="the receipt's; none if it never ran")
    duration_ms: float | None = None
    scene_hash_before: str | None = None
    scene_hash_after: str | None = None
    error_code: str | None = None
    rolled_back_by: str | None = Field(default=None, description="checkpoint | compensation")
    reason: str | None = Field(default=None, description="why it was skipped")


class OriginOut(_Model):
    """The run a re-run or fork came from (ADR 0063)."""

    run: str
    kind: str = Field(description="rerun | fork | replay")
    from_op: int = Field(description="the operation it ran again from, 1 for the first")
    base_revision: int | None = Field(description="the revision a fork started from")


class GatesOut(_Model):
    revision: int
    passed: bool
    guardians: list[str]
    failed_gates: list[str]


def versions_out(found: dict[str, Any] | None) -> VersionsOut | None:
    return None if found is None else VersionsOut.model_validate(found)


def operation_out(op: dict[str, Any]) -> OperationOut:
    known = set(OperationOut.model_fields)
    return OperationOut.model_validate({k: v for k, v in op.items() if k in known})


def account_out(detail: RunDetail) -> dict[str, Any]:
    """The fields the run detail adds to its run and timeline."""
    found = timeline.versions(detail)
    asked = timeline.request(detail)
    return {
        "door": asked["door"],
        "origin": OriginOut.model_validate(asked["origin"]) if asked["origin"] else None,
        "versions": RunVersions(
            planned=versions_out(found["planned"]), executed=versions_out(found["executed"])
        ),
        "revision": timeline.revision(detail),
        "operations": [operation_out(op) for op in timeline.operations(detail)],
        "gates": [
            GatesOut(
                revision=g["revision"],
                passed=g["passed"],
                guardians=g["guardians"],
                failed_gates=g["failed_gates"],
            )
            for g in timeline.gates(detail)
        ],
    }


class RunDetailResponse(_Model):
    """One run, its timeline in log order, and that timeline laid out: each operation with
    its arguments, decision, approver and receipt; the gates; the revision it made; the
    versions that planned and executed it."""

    run: RunSummary
    timeline: list[TimelineItem]
    door: str | None = Field(description="the transport the request came through: cli, http...")
    origin: OriginOut | None = Field(description="for a re-run or fork, the run it came from")
    versions: RunVersions
    revision: int | None = Field(description="the revision its last execution committed")
    operations: list[OperationOut]
    gates: list[GatesOut]
