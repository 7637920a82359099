"""The inspection artifact of a committed revision (``contracts.inspection``), assembled.

The bridge describes the scene; the run part comes from the ``Approved`` the executor ran
and the approvals in the run's log, which the handler has already read for its authority
check. Pure: no I/O, so the runner decides when to ask and where to store.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from contracts.events import AnyEvent, ApprovalRequested, ApprovalResolved, Approved, PolicyDecided
from contracts.inspection import (
    Inspection,
    RunApproval,
    RunOperation,
    RunPythonStep,
    RunRecord,
    SceneInspection,
    encode,
)
from contracts.python_approvals import PYTHON_TOOLS, TRUSTED_TOOL
from contracts.scenes import Head


def run_record(approved: Approved, events: Sequence[AnyEvent] = ()) -> RunRecord:
    """What the run did: its approved operations in execution order and every resolution
    a person gave in it (``events`` is the run's log; without it, no approvals)."""
    ops = {op.operation_id: op for op in approved.operation_set.operations}
    order = [*approved.schedule, *(i for i in ops if i not in approved.schedule)]
    asked = {e.approval_id: e for e in events if isinstance(e, ApprovalRequested)}
    approvals = [
        RunApproval(
            approval_id=e.approval_id,
            decision=e.decision,
            resolved_by=e.resolved_by,
            operation_ids=list(asked[e.approval_id].operation_ids)
            if e.approval_id in asked
            else [],
            request_hash=e.request_hash,
        )
        for e in events
        if isinstance(e, ApprovalResolved)
    ]
    return RunRecord(
        run_id=approved.run_id,
        user=approved.user,
        approved_by=approved.approved_by,
        operations=[
            RunOperation(
                operation_id=ops[i].operation_id,
                tool_name=ops[i].tool_name,
                safety_level=ops[i].safety_level,
                args=dict(ops[i].args),
            )
            for i in order
            if i in ops
        ],
        approvals=approvals,
        python_steps=python_steps(approved, events),
    )


def python_steps(approved: Approved, events: Sequence[AnyEvent] = ()) -> list[RunPythonStep]:
    """Every Python step of the run by its code's hash, with who approved that code: the
    person whose resolution quoted the hash, or the standing approval policy applied."""
    quoted = {
        h: e.resolved_by
        for e in events
        if isinstance(e, ApprovalResolved) and e.decision != "reject"
        for h in e.code_sha256
    }
    standing = {
        d.operation_id: p
        for e in events
        if isinstance(e, PolicyDecided)
        for d in e.decisions
        for p in d.policy_ids
        if p.startswith("allowlist#")
    }
    steps = []
    for op in approved.operation_set.operations:
        if op.tool_name not in PYTHON_TOOLS:
            continue
        code = str(op.args.get("code_sha256", ""))
        mode: Literal["safe", "trusted"] = "trusted" if op.tool_name == TRUSTED_TOOL else "safe"
        steps.append(
            RunPythonStep(
                operation_id=op.operation_id,
                mode=mode,
                code_sha256=code,
                approved_by=quoted.get(code) or standing.get(op.operation_id),
            )
        )
    return steps


def document(scene: SceneInspection, head: Head, run: RunRecord | None) -> bytes:
    """The artifact's bytes for revision ``head``: CPU-bound on a large scene, so callers on
    an event loop run it in a thread."""
    return encode(
        Inspection(
            scene_id=head.scene_id,
            revision=head.revision,
            scene_hash=head.scene_hash,
            blender_version=scene.blender_version,
            objects=scene.objects,
            node_groups=scene.node_groups,
            materials=scene.materials,
            active_camera=scene.active_camera,
            run=run,
            data=scene.data,
            libraries=scene.libraries,
        )
    )
