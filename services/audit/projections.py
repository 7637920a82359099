"""Event -> row changes for the audit views. Pure: no I/O, no clock.

Every value comes from the event or from the rows it builds on, never from the wall
clock or the database, so replaying the log (``blendmesh audit rebuild``) reproduces the
views exactly. The store hands in the run's current rows and writes what comes back in
one transaction with the stream sequence.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

import msgspec

from contracts import events as ev
from contracts.canonical import canonical_hash
from contracts.fold import action_changes, run_state_after
from contracts.render_events import RenderEvent
from contracts.scene_files import plan_words
from services.audit.timeline import detail
from services.audit.timeline_facts import facts

Row = dict[str, Any]


class Change(NamedTuple):
    """One row to write. Keyed views (runs, actions) ``replace`` by primary key; the audit
    records, timeline and dead letters are append-only, so a second insert fails loudly.

    A named tuple rather than a frozen dataclass: a rebuild makes four for every event of
    the log, and a frozen dataclass is built a field at a time through ``__setattr__``."""

    table: str
    row: Row
    replace: bool = False


class RunView(NamedTuple):
    """What the projection builds on: the run's row, its actions, each op's last record.

    A named tuple for the reason ``Change`` is one: one is made for every event."""

    run: Row | None = None
    actions: Mapping[str, Row] = MappingProxyType({})
    records: Mapping[str, Row] = MappingProxyType({})


def project(event: ev.AnyEvent, seq: int, view: RunView) -> list[Change]:
    """The row changes of the event at stream sequence ``seq``."""
    if isinstance(event, ev.DeadLettered):
        return [Change("dead_letters", _dead_letter(event, seq))]
    if not isinstance(event, ev.RunEvent) or isinstance(event, RenderEvent):
        return []  # a render job is no run: docs/renders.md says where it is shown
    changes = [Change("runs", _run_row(view.run, event), replace=True)]
    changes += [Change("actions", r, replace=True) for r in _action_rows(event, view.actions)]
    record = _audit_record(event, seq, view)
    if record is not None:
        changes.append(Change("audit_records", record))
    entry = {
        "stream_seq": seq,
        "run_id": event.run_id,
        "event_id": event.event_id,
        "type": ev.event_kind(event),
        "at": event.at,
        "detail": detail(event),
        # JSON text: a view row holds scalars; the run query hands it out decoded.
        "facts": msgspec.json.encode(facts(event), order="sorted").decode(),
    }
    changes.append(Change("timeline", entry))
    return changes


MESSAGE_CHARS = 500  # an audit record says what happened; the receipt keeps the rest

RUN_COLUMNS = (
    "run_id", "request_id", "thread_id", "user", "scene_id", "prompt", "state", "planner",
    "model", "error_code", "message", "blend_path", "scene_hash", "created_at", "updated_at",
    "plan_words",
)  # fmt: skip
ACTION_COLUMNS = (
    "run_id", "operation_id", "tool_name", "safety_level", "state", "decision", "mcp_call_id",
    "blender_mutation_id", "error_code", "approval_id", "input_hash", "created_at", "updated_at",
)  # fmt: skip


def _run_row(prev: Row | None, event: ev.RunEvent) -> Row:
    ids = {"run_id": event.run_id, "request_id": event.request_id, "created_at": event.at,
           "thread_id": event.thread_id, "user": event.user}  # fmt: skip
    row = dict(prev) if prev is not None else dict.fromkeys(RUN_COLUMNS) | ids
    row["state"] = run_state_after(row["state"], event)
    row["updated_at"] = event.at
    match event:
        case ev.RunRequested():
            row.update(
                request_id=event.request_id,
                thread_id=event.thread_id,
                user=event.user,
                scene_id=event.scene_id,
                prompt=event.prompt,
                # A run made without words (an import, a revert, a plan as written) is
                # listed by what it does: a list showed it by its id alone.
                plan_words=plan_words(event.plan) if event.prompt is None else None,
                created_at=event.at,
            )
        case ev.PlanningStarted():
            row["planner"] = event.planner
        case ev.Replied():
            row.update(planner=event.planner, message=event.text)
            row["model"] = event.model or row["model"]
        case ev.Planned():
            row.update(planner=event.planner, model=event.model)
            row["scene_id"] = row["scene_id"] or event.scene_id
        case ev.PlanRejected():
            row.update(
                planner=event.planner, error_code=event.failure.error_code, message=event.message
            )
            row["model"] = event.model or row["model"]
        case ev.Denied() | ev.RunFailed():
            row.update(error_code=event.failure.error_code, message=event.message)
        case ev.Executed():
            row.update(blend_path=event.blend_path, scene_hash=event.scene_hash)
        case ev.RunCompleted():
            row["message"] = event.summary
            if event.blend_path is not None:
                row["blend_path"] = event.blend_path
            if event.scene_hash is not None:
                row["scene_hash"] = event.scene_hash
    return row


def _empty_action(run_id: str, operation_id: str) -> Row:
    return dict.fromkeys(ACTION_COLUMNS) | {"run_id": run_id, "operation_id": operation_id}


def _action_rows(event: ev.RunEvent, actions: Mapping[str, Row]) -> list[Row]:
    rows: dict[str, Row] = {}

    def row(op_id: str) -> Row:
        if op_id not in rows:
            prev = actions.get(op_id)
            rows[op_id] = dict(prev) if prev else _empty_action(event.run_id, op_id)
            rows[op_id]["created_at"] = rows[op_id]["created_at"] or event.at
        return rows[op_id]

    match event:
        case ev.Planned():  # a new plan (or repair iteration) starts each operation afresh
            for op in event.operation_set.operations:
                rows[op.operation_id] = _empty_action(event.run_id, op.operation_id)
                rows[op.operation_id].update(
                    created_at=event.at,
                    tool_name=op.tool_name,
                    safety_level=op.safety_level,
                    input_hash=_input_hash(op.args),
                )
        case ev.ApprovalRequested():
            for op_id in event.operation_ids:
                row(op_id)["approval_id"] = event.approval_id
        case ev.PolicyDecided():
            for d in event.decisions:
                r = row(d.operation_id)
                r.update(
                    decision=d.mode,
                    tool_name=r["tool_name"] or d.tool_name,
                    safety_level=r["safety_level"] or d.safety_level,
                )
        case ev.Denied():
            for op_id in event.operation_ids:
                row(op_id)["error_code"] = event.failure.error_code
        case ev.OperationStarted():
            r = row(event.operation_id)
            r.update(mcp_call_id=event.mcp_call_id, tool_name=r["tool_name"] or event.tool_name)
        case ev.OperationSucceeded() | ev.OperationFailed():
            r, receipt = row(event.operation_id), event.receipt
            r.update(
                mcp_call_id=event.mcp_call_id,
                tool_name=r["tool_name"] or receipt.tool_name,
                safety_level=r["safety_level"] or receipt.safety_level,
            )
            if isinstance(event, ev.OperationSucceeded):
                r.update(blender_mutation_id=event.blender_mutation_id, error_code=None)
            else:
                r.update(
                    blender_mutation_id=receipt.blender_mutation_id,
                    error_code=event.failure.error_code,
                )
    for op_id, state in action_changes(event):
        row(op_id)["state"] = state
    for changed in rows.values():  # 002 §9: every action says when it last changed
        changed["updated_at"] = event.at
    return [rows[k] for k in sorted(rows)]


def _input_hash(args: Any) -> str | None:
    try:
        return canonical_hash(args)
    except (TypeError, ValueError):  # the planner checked the plan; this is only a label
        return None


def _audit_record(event: ev.RunEvent, seq: int, view: RunView) -> Row | None:
    record = _record_fields(event, seq, view)
    if record is None:
        return None
    run = view.run or {}
    action = view.actions.get(record["operation_id"]) or {}
    # spec 002 §9: the model, input, decision and approval behind the action
    return record | {
        "scene_id": run.get("scene_id"),
        "model": run.get("model"),
        "input_hash": action.get("input_hash"),
        "decision": action.get("decision"),
        "approval_id": action.get("approval_id"),
    }


def _record_fields(event: ev.RunEvent, seq: int, view: RunView) -> Row | None:
    base: Row = {
        "stream_seq": seq,
        "event_id": event.event_id,
        "run_id": event.run_id,
        "user": event.user,
        "timestamp": event.at,
        "request_id": event.request_id,
    }
    match event:
        case ev.OperationSucceeded() | ev.OperationFailed():
            receipt = event.receipt
            mutation = (
                event.blender_mutation_id
                if isinstance(event, ev.OperationSucceeded)
                else receipt.blender_mutation_id
            )
            failure = event.failure if isinstance(event, ev.OperationFailed) else None
            return base | {
                "error_code": receipt.error_code or (failure.error_code if failure else None),
                "message": receipt.message[:MESSAGE_CHARS] or None,
                "operation_id": event.operation_id,
                "mcp_call_id": event.mcp_call_id,
                "blender_mutation_id": mutation,
                "tool_name": receipt.tool_name,
                "safety_level": receipt.safety_level,
                "status": receipt.status,
                "scene_hash_before": receipt.scene_hash_before,
                "scene_hash_after": receipt.scene_hash_after,
            }
        case ev.OperationRolledBack():
            # The record of the failure it undoes supplies what the event does not carry;
            # the rollback starts from the failed op's scene and ends at the restored hash.
            failed = view.records.get(event.operation_id) or {}
            action = view.actions.get(event.operation_id) or {}
            return base | {
                "error_code": failed.get("error_code"),
                "message": f"rolled back by {event.method}",
                "operation_id": event.operation_id,
                "mcp_call_id": event.mcp_call_id,
                "blender_mutation_id": failed.get("blender_mutation_id"),
                "tool_name": failed.get("tool_name") or action.get("tool_name"),
                "safety_level": failed.get("safety_level") or action.get("safety_level"),
                "status": "rolled_back",
                "scene_hash_before": failed.get("scene_hash_after")
                or failed.get("scene_hash_before"),
                "scene_hash_after": event.scene_hash,
            }
        case ev.GatesEvaluated():
            # The guardians' verdict on the committed revision is an audit record too: who
            # (the gates configuration) judged which scene state, and how it came out.
            gates = ",".join(event.envelope.failed_gates)
            return base | {
                "error_code": None if event.envelope.success else "GATES_FAILED",
                "message": None,
                # Not an operation: the gates of one revision, named after it.
                "operation_id": f"gates@{event.revision}",
                "tool_name": "guardians",
                "safety_level": "read_only",
                "status": "gates_passed" if event.envelope.success else f"gates_failed:{gates}",
                "scene_hash_before": view.run.get("scene_hash") if view.run else None,
                "scene_hash_after": view.run.get("scene_hash") if view.run else None,
            }
    return None


def _dead_letter(event: ev.DeadLettered, seq: int) -> Row:
    return {
        "stream_seq": seq,
        "consumer": event.consumer,
        "subject": event.subject,
        "failed_seq": event.stream_seq,
        "deliveries": event.deliveries,
        "reason": event.reason,
        "at": event.at,
    }
