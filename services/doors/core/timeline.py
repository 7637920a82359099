"""A run's timeline as the doors lay it out (issue 42). Pure: no I/O.

Built on the audit service's timeline (``RunDetail.timeline``, each entry's ``facts``),
so the CLI, the gateway and the console show one account of a run: every event with its
time, each operation with its arguments and receipt, the policy's decision and who
approved, the gates, the revision the run made, and the releases that planned and
executed it.
"""

from __future__ import annotations

from typing import Any

import msgspec

from contracts.queries import RunDetail

Row = dict[str, Any]


def operations(detail: RunDetail) -> list[Row]:
    """Each operation of the run's last plan, in plan order, with what became of it."""
    ops: dict[str, Row] = {}
    asked: dict[str, list[str]] = {}
    for entry in detail.timeline:
        facts = entry.facts
        match entry.type:
            case "run.planned":
                ops = {op["operation_id"]: dict(op) for op in facts.get("operations", [])}
            case "run.policy_decided":
                for d in facts.get("decisions", []):
                    _row(ops, d["operation_id"]).update(decision=d["mode"], policy=d["policy_ids"])
            case "run.approval_requested":
                asked[facts["approval_id"]] = facts.get("operation_ids", [])
            case "run.approval_resolved" if facts.get("decision") == "reject":
                for op_id in asked.get(facts["approval_id"], []):
                    _row(ops, op_id)["approved_by"] = f"rejected by {facts['resolved_by']}"
            case "run.approved":
                for op_id in facts.get("operation_ids", []):
                    _row(ops, op_id)["approved_by"] = facts["approved_by"]
            case "run.op_succeeded" | "run.op_failed":
                receipt = {k: v for k, v in facts.items() if k not in ("operation_id", "tool")}
                _row(ops, facts["operation_id"]).update(receipt)
            case "run.op_rolled_back":
                row = _row(ops, facts["operation_id"])
                row.update(status="rolled_back", rolled_back_by=facts["method"])
                row["scene_hash_after"] = facts["scene_hash"]
            case "run.op_skipped":
                _row(ops, facts["operation_id"]).update(status="skipped", reason=facts["reason"])
            case "run.executed":
                for receipt in facts.get("receipts", []):
                    row = _row(ops, receipt["operation_id"])
                    row.setdefault("status", receipt["status"])
    return list(ops.values())


def versions(detail: RunDetail) -> Row:
    """The releases, tool catalog and Blender that planned and that executed the run (the
    last of each: a model's repair plans again)."""
    found: Row = {"planned": None, "executed": None}
    keys = ("blendmesh_version", "catalog_version", "blender_version")
    for entry in detail.timeline:
        if entry.type == "run.planned":
            found["planned"] = {k: entry.facts.get(k) for k in keys}
        elif entry.type == "run.executed":
            found["executed"] = {k: entry.facts.get(k) for k in keys}
    return found


def gates(detail: RunDetail) -> list[Row]:
    """Each verdict of the guardians on a revision the run made."""
    return [dict(e.facts) for e in detail.timeline if e.type == "run.gates_evaluated"]


def revision(detail: RunDetail) -> int | None:
    """The revision the run's last execution committed; None: it committed none."""
    made = [e.facts.get("revision") for e in detail.timeline if e.type == "run.executed"]
    return made[-1] if made else None


def request(detail: RunDetail) -> Row:
    """Which door the run came through and, for a re-run or fork, the run it came from."""
    asked = next((e.facts for e in detail.timeline if e.type == "run.requested"), {})
    return {"door": asked.get("transport"), "origin": asked.get("origin")}


def as_json(detail: RunDetail) -> Row:
    """The whole account, for ``--json`` and the HTTP run detail."""
    return {
        "run": msgspec.to_builtins(detail.run),
        **request(detail),
        "versions": versions(detail),
        "revision": revision(detail),
        "operations": operations(detail),
        "gates": gates(detail),
        "timeline": msgspec.to_builtins(detail.timeline),
    }


def _row(ops: dict[str, Row], operation_id: str) -> Row:
    return ops.setdefault(operation_id, {"operation_id": operation_id})
