"""Whether the log backs an ``Approved``: the executor runs nothing policy did not decide.

Only the policy role may publish ``approved`` on the server blendmesh starts, but a
server joined as it is configured, or a permission bypassed, must not be enough to change
a scene. So the executor checks the run's own history before it touches Blender: the plan
it is asked to run was planned for this run, policy decided every operation of it and
denied none, and every operation that needed a person was approved, quoting the hash of
exactly the operations that were asked about, and naming the hash of any trusted Python
code it approves (approving up front never covers such code). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from contracts.events import (
    AnyEvent,
    ApprovalRequested,
    ApprovalResolved,
    Approved,
    Planned,
    PolicyDecided,
    RunRequested,
)
from contracts.python_approvals import TRUSTED_TOOL, unquoted


def unbacked(approved: Approved, events: Sequence[AnyEvent]) -> str | None:
    """None when ``events`` (the run's log) back ``approved``; otherwise why they do not."""
    requested = next((e for e in events if isinstance(e, RunRequested)), None)
    if requested is None:
        return "the run has no request in the log"
    if approved.user != requested.user or approved.scene_id != requested.scene_id:
        return (
            f"it names user {approved.user!r} and scene {approved.scene_id!r}, "
            f"the request {requested.user!r} and {requested.scene_id!r}"
        )
    plans = [
        e
        for e in events
        if isinstance(e, Planned)
        and e.operation_set == approved.operation_set
        and e.schedule == approved.schedule
        and e.scene_id == approved.scene_id
        and e.rollback_boundary == approved.rollback_boundary
    ]
    if not plans:
        return "no plan of the run matches the approved operations"
    reasons = [_backs(planned, requested, approved, events) for planned in plans]
    if None in reasons:
        return None
    return reasons[-1]


def _backs(
    planned: Planned, requested: RunRequested, approved: Approved, events: Sequence[AnyEvent]
) -> str | None:
    decided = next(
        (e for e in events if isinstance(e, PolicyDecided) and e.causation_id == planned.event_id),
        None,
    )
    if decided is None:
        return "policy decided nothing about the approved plan"
    modes = {d.operation_id: d.mode for d in decided.decisions}
    if set(modes) != {op.operation_id for op in planned.operation_set.operations}:
        return "policy's decision does not cover every approved operation"
    denied = sorted(op for op, mode in modes.items() if mode == "deny")
    if denied:
        return f"policy denied {', '.join(denied)}"
    waiting = sorted(op for op, mode in modes.items() if mode == "require_approval")
    if not waiting:
        return None
    by_id = {op.operation_id: op for op in planned.operation_set.operations}
    code = [(by_id[i].tool_name, by_id[i].args) for i in waiting]
    up_front = planned.pre_approved and requested.pre_approved
    if up_front and approved.approved_by == requested.user and not _trusted(code):
        return None  # the requesting user approved destructive operations up front
    asked = next(
        (
            e
            for e in events
            if isinstance(e, ApprovalRequested) and e.causation_id == planned.event_id
        ),
        None,
    )
    if asked is None or sorted(asked.operation_ids) != waiting:
        return f"{', '.join(waiting)} needed a person's approval, and none was asked for"
    resolved = any(
        isinstance(e, ApprovalResolved)
        and e.approval_id == asked.approval_id
        and e.decision != "reject"
        and e.request_hash == asked.request_hash
        and not unquoted(code, e.code_sha256)
        for e in events
    )
    if not resolved:
        return f"nobody approved {', '.join(waiting)} as they were asked about"
    return None


def _trusted(code: Sequence[tuple[str, object]]) -> bool:
    return any(tool == TRUSTED_TOOL for tool, _ in code)
