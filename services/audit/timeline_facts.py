"""What each run event adds to the run's timeline, as data. Pure: no I/O.

``timeline.detail`` is the line a person reads; these are the facts behind it that a
door lays out (issue 42): each operation with its arguments, its receipt (status,
duration, scene hash before and after), the policy's decision and who approved, the
gates, the revision, and the releases and catalog that planned and executed the run.
Kept to what the event itself says, so ``blendmesh audit rebuild`` reproduces them, and
bounded: a plan's arguments share ``ARGS_BUDGET`` characters, a text is cut at
``TEXT_CHARS``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from contracts import events as ev
from contracts.receipts import Receipt

ARGS_BUDGET = 16_000  # characters of arguments one plan's facts carry, all operations
MIN_ARGS_CHARS = 200  # what each operation keeps however many there are
TEXT_CHARS = 500
MAX_IDS = 500  # operation ids listed by one event (a plan holds 500 at most by default)

Facts = dict[str, Any]


def facts(event: ev.RunEvent) -> Facts:
    """The structured facts of ``event`` for its timeline entry; {} for none."""
    match event:
        case ev.RunRequested():
            origin = msgspec.to_builtins(event.origin) if event.origin else None
            return {"scene_id": event.scene_id, "prompt": _text(event.prompt),
                    "planner": event.planner, "transport": event.host.transport,
                    "origin": origin}  # fmt: skip
        case ev.Planned():
            return _planned(event)
        case ev.PlanRejected() | ev.Denied() | ev.RunFailed():
            return {"error_code": event.failure.error_code, "message": _text(event.message)}
        case ev.PolicyDecided():
            decisions = [
                {
                    "operation_id": d.operation_id,
                    "tool": d.tool_name,
                    "mode": d.mode,
                    "policy_ids": d.policy_ids[:20],
                    "reason": _text(d.reason),
                }
                for d in event.decisions[:MAX_IDS]
            ]
            return {"policy_set": event.policy_set, "policy_set_hash": event.policy_set_hash,
                    "decisions": decisions}  # fmt: skip
        case ev.ApprovalRequested():
            return {"approval_id": event.approval_id,
                    "operation_ids": event.operation_ids[:MAX_IDS]}  # fmt: skip
        case ev.ApprovalResolved():
            return {"approval_id": event.approval_id, "decision": event.decision,
                    "resolved_by": event.resolved_by}  # fmt: skip
        case ev.Approved():
            return {"approved_by": event.approved_by, "operation_ids": event.schedule[:MAX_IDS],
                    "catalog_version": event.catalog_version}  # fmt: skip
        case ev.OperationStarted():
            return {"operation_id": event.operation_id, "tool": event.tool_name,
                    "scene_hash_before": event.scene_hash_before}  # fmt: skip
        case ev.OperationSucceeded() | ev.OperationFailed():
            return _receipt(event.receipt)
        case ev.OperationRolledBack():
            return {"operation_id": event.operation_id, "method": event.method,
                    "scene_hash": event.scene_hash}  # fmt: skip
        case ev.OperationSkipped():
            return {"operation_id": event.operation_id, "reason": _text(event.reason)}
        case ev.Executed():
            return _executed(event)
        case ev.GatesEvaluated():
            return {"revision": event.revision, "passed": event.envelope.success,
                    "guardians": event.guardians, "failed_gates": event.envelope.failed_gates,
                    "messages": [_text(m) for m in event.envelope.messages[:20]]}  # fmt: skip
        case ev.CancelRequested():
            return {"cancelled_by": event.cancelled_by, "reason": event.reason}
    return {}


def _planned(event: ev.Planned) -> Facts:
    ops = event.operation_set.operations
    room = max(MIN_ARGS_CHARS, ARGS_BUDGET // max(len(ops), 1))
    return {
        "planner": event.planner,
        "model": event.model,
        "iteration": event.iteration,
        "catalog_version": event.catalog_version,
        "blendmesh_version": event.blendmesh_version,
        "blender_version": event.blender_version,
        "operations": [
            {
                "operation_id": op.operation_id,
                "tool": op.tool_name,
                "safety_level": op.safety_level,
                **_args(op.args, room),
            }
            for op in ops
        ],
    }


def _args(args: dict[str, Any], room: int) -> Facts:
    """The arguments as planned, or, past ``room`` characters of JSON, their start as text
    (the run's ``run.planned`` event keeps them whole)."""
    text = msgspec.json.encode(args, order="sorted").decode()
    if len(text) <= room:
        return {"args": args}
    return {"args": None, "args_excerpt": text[:room], "args_chars": len(text)}


def _receipt(receipt: Receipt) -> Facts:
    return {
        "operation_id": receipt.operation_id,
        "tool": receipt.tool_name,
        "status": receipt.status,
        "duration_ms": round(receipt.duration_ms, 3),
        "scene_hash_before": receipt.scene_hash_before,
        "scene_hash_after": receipt.scene_hash_after,
        "error_code": receipt.error_code,
    }


def _executed(event: ev.Executed) -> Facts:
    return {
        "revision": event.revision,
        "scene_hash": event.scene_hash,
        "error_code": event.failure.error_code if event.failure else None,
        "receipts": [_receipt(r) for r in event.receipts[:MAX_IDS]],
        "blendmesh_version": event.blendmesh_version,
        "catalog_version": event.catalog_version,
        "blender_version": event.blender_version,
    }


def _text(text: str | None) -> str | None:
    return None if text is None else text[:TEXT_CHARS]
