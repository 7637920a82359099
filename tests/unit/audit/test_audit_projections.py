"""The audit projections: exactly-once application, and a recorded history as a regression.

``tests/fixtures/run_history_ring.jsonl`` is a recorded log (one event per line, stream
sequence = line number) of two runs: one that needed an approval and completed, one whose
operation failed and was rolled back, with a dead letter between them. It is replayed
through the projections and compared with hand-checked rows. Regenerate it only on
purpose, with ``python tests/unit/audit/test_audit_projections.py``. The behavioural tests run
against an in-memory fake of the store port and against the real SQLite adapter alike.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from contracts import events as ev
from contracts.canonical import canonical_hash
from contracts.failures import failure
from contracts.operations import Operation, OperationSet, SafetyLevel
from contracts.receipts import Receipt, ReceiptStatus
from services.audit.handlers import apply_event
from services.audit.projections import Row, RunView
from services.audit.store import VIEWS, Applied, Project, SqliteStore
from services.audit.tables import Batch

HISTORY = Path(__file__).parents[2] / "fixtures" / "run_history_ring.jsonl"
T0 = 1767225600.0  # 2026-01-01T00:00:00Z


class MemoryStore:
    """The ``ViewStore`` port in dicts: the same contract as ``SqliteStore``."""

    def __init__(self) -> None:
        self.seq = 0
        self.views: dict[str, dict[Any, Row]] = {v: {} for v in VIEWS}

    async def last_seq(self) -> int:
        return self.seq

    async def apply(self, seq: int, run_id: str | None, project: Project) -> Applied:
        if seq <= self.seq:
            return Applied(new=False, records=await self.records_at(seq))
        records = sorted(self.views["audit_records"].items())
        view = RunView(
            run=self.views["runs"].get(run_id),
            actions={k[1]: r for k, r in self.views["actions"].items() if k[0] == run_id},
            records={r["operation_id"]: r for _, r in records if r["run_id"] == run_id},
        )
        for change in project(view):
            key = _KEYS.get(change.table, lambda r: r["stream_seq"])(change.row)
            assert change.replace or key not in self.views[change.table], "append-only view"
            self.views[change.table][key] = dict(change.row)
        self.seq = seq
        return Applied(new=True, records=await self.records_at(seq))

    async def apply_many(self, batch: Batch) -> list[Row]:
        return [
            row
            for seq, run_id, project in batch
            for row in (await self.apply(seq, run_id, project)).records
        ]

    async def runs(self, limit: int, user: str | None = None, active: bool = False) -> list[Row]:
        rows = sorted(self.views["runs"].values(), key=lambda r: (r["created_at"], r["run_id"]))
        ended = ("completed", "failed") if active else ()
        return [r for r in rows[::-1] if user in (None, r["user"]) and r["state"] not in ended][
            :limit
        ]

    async def run(self, run_id: str) -> dict[str, Any] | None:
        found = self.views["runs"].get(run_id)
        if found is None:
            return None
        detail: dict[str, Any] = {"run": found}
        for view, order in (
            ("actions", "operation_id"),
            ("audit_records", "stream_seq"),
            ("timeline", "stream_seq"),
        ):
            rows = [r for r in self.views[view].values() if r["run_id"] == run_id]
            detail[view] = sorted(rows, key=lambda r: r[order])
        return detail

    async def records_at(self, seq: int) -> list[Row]:
        found = self.views["audit_records"].get(seq)
        return [found] if found is not None else []

    async def dump(self) -> dict[str, list[Row]]:
        out: dict[str, list[Row]] = {"tracking": [{"last_seq": self.seq}]}
        for view, rows in self.views.items():
            out[view] = [rows[k] for k in sorted(rows)]
        return out

    async def close(self) -> None:
        pass


_KEYS = {"runs": lambda r: r["run_id"], "actions": lambda r: (r["run_id"], r["operation_id"])}


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    s = MemoryStore() if request.param == "memory" else await SqliteStore.open(tmp_path / "a.db")
    try:
        yield s
    finally:
        await s.close()


# -- the recorded history ----------------------------------------------------------------


def _receipt(
    op: Operation, status: ReceiptStatus, before: str, after: str | None, **kw: Any
) -> Receipt:
    return Receipt(
        operation_id=op.operation_id,
        tool_name=op.tool_name,
        safety_level=op.safety_level,
        status=status,
        scene_hash_before=before,
        scene_hash_after=after,
        duration_ms=12.5,
        **kw,
    )


def _op(
    op_id: str, tool: str, level: SafetyLevel, args: dict[str, Any], deps: list[str]
) -> Operation:
    return Operation(
        operation_id=op_id, tool_name=tool, args=args, depends_on=deps, safety_level=level
    )


def generate_history() -> list[ev.AnyEvent]:
    """Two runs as the mesh logs them, built from the contract types."""
    clock = iter(T0 + 0.25 * i for i in range(1000))
    out: list[ev.AnyEvent] = []

    def emit(cause: ev.RunEvent, kind: type[Any], index: int = 0, **fields: Any) -> Any:
        out.append(ev.follow(cause, kind, next(clock), index, **fields))
        return out[-1]

    # Run 1: a destructive step needs approval; the user approves; everything succeeds.
    req = ev.RunRequested(
        event_id="evt-req-1",
        at=next(clock),
        run_id="run-ring",
        request_id="gem-req-ring",
        thread_id="thread-ana",
        user="ana",
        scene_id="shot010",
        prompt="add a torus named Ring, bevel it and delete the Cube",
    )
    out.append(req)
    ops = [
        _op("inspect", "scene.snapshot", "read_only", {}, []),
        _op("ring", "object.create", "safe_write", {"kind": "torus", "name": "Ring"}, []),
        _op("bevel", "modifier.add", "safe_write", {"object": "Ring", "type": "BEVEL"}, ["ring"]),
        _op("drop_cube", "object.delete", "destructive", {"name": "Cube"}, ["inspect"]),
    ]
    opset = OperationSet(request_id=req.request_id, operations=ops)
    order = ["drop_cube", "inspect", "ring", "bevel"]
    planned = emit(
        req,
        ev.Planned,
        scene_id="shot010",
        planner="rules",
        operation_set=opset,
        schedule=order,
        catalog_version="cat-1",
    )
    modes = {"drop_cube": "require_approval"}
    emit(
        planned,
        ev.PolicyDecided,
        policy_set="policies-v1",
        decisions=[
            ev.OperationDecision(
                operation_id=o.operation_id,
                tool_name=o.tool_name,
                safety_level=o.safety_level,
                mode=modes.get(o.operation_id, "allow"),
                reason="default",
                policy_ids=["default"],
            )
            for o in ops
        ],
    )
    asked = emit(
        planned,
        ev.ApprovalRequested,
        approval_id="appr-1",
        operation_ids=["drop_cube"],
        reason="object.delete is destructive",
    )
    resolved = emit(
        asked, ev.ApprovalResolved, approval_id="appr-1", decision="approve_once", resolved_by="ana"
    )
    approved = emit(
        resolved,
        ev.Approved,
        scene_id="shot010",
        operation_set=opset,
        schedule=order,
        approved_by="ana",
    )
    hashes = iter(["h0", "h1", "h1", "h2", "h3"])
    receipts, before = [], next(hashes)
    for i, op in enumerate(sorted(ops, key=lambda o: order.index(o.operation_id))):
        call = f"mcp-{op.operation_id}"
        emit(
            approved,
            ev.OperationStarted,
            i,
            operation_id=op.operation_id,
            tool_name=op.tool_name,
            mcp_call_id=call,
            scene_hash_before=before,
        )
        after = next(hashes)
        mutation = None if op.safety_level == "read_only" else f"mut-{op.operation_id}"
        receipt = _receipt(
            op, "succeeded", before, after, mcp_call_id=call, blender_mutation_id=mutation
        )
        emit(
            approved,
            ev.OperationSucceeded,
            i,
            operation_id=op.operation_id,
            mcp_call_id=call,
            blender_mutation_id=mutation,
            receipt=receipt,
        )
        receipts.append(receipt)
        before = after
    executed = emit(
        approved,
        ev.Executed,
        scene_id="shot010",
        receipts=receipts,
        scene_hash="h3",
        blend_path="scenes/shot010/h3.blend",
    )
    emit(
        executed,
        ev.RunCompleted,
        summary="4 of 4 operations applied to scene shot010",
        blend_path="scenes/shot010/h3.blend",
        scene_hash="h3",
    )

    # A message some consumer could not read, between the runs.
    out.append(
        ev.DeadLettered(
            event_id="evt-dlq-1",
            at=next(clock),
            consumer="guardians",
            subject="bm.run.bad.executed",
            stream_seq=7,
            deliveries=1,
            reason="undecodable message: truncated",
            payload="{bad",
        )
    )

    # Run 2: allowed by policy; the material step fails mid-way and is rolled back.
    req2 = ev.RunRequested(
        event_id="evt-req-2",
        at=next(clock),
        run_id="run-mat",
        request_id="gem-req-mat",
        thread_id="thread-ana",
        user="ana",
        scene_id="shot010",
        prompt="scale Ring by 2 and make it gold",
    )
    out.append(req2)
    ops2 = [
        _op("scale", "object.transform", "safe_write", {"name": "Ring", "scale": 2}, []),
        _op("gold", "material.assign", "safe_write", {"object": "Ring", "name": "Gold"}, ["scale"]),
    ]
    opset2 = OperationSet(request_id=req2.request_id, operations=ops2)
    planned2 = emit(
        req2,
        ev.Planned,
        scene_id="shot010",
        planner="rules",
        operation_set=opset2,
        schedule=["scale", "gold"],
        catalog_version="cat-1",
    )
    emit(
        planned2,
        ev.PolicyDecided,
        policy_set="policies-v1",
        decisions=[
            ev.OperationDecision(
                operation_id=o.operation_id,
                tool_name=o.tool_name,
                safety_level=o.safety_level,
                mode="allow",
                reason="safe_write",
            )
            for o in ops2
        ],
    )
    approved2 = emit(
        planned2,
        ev.Approved,
        scene_id="shot010",
        operation_set=opset2,
        schedule=["scale", "gold"],
        approved_by="policy",
    )
    emit(
        approved2,
        ev.OperationStarted,
        0,
        operation_id="scale",
        tool_name="object.transform",
        mcp_call_id="mcp-scale",
        scene_hash_before="h3",
    )
    ok = _receipt(
        ops2[0], "succeeded", "h3", "h4", mcp_call_id="mcp-scale", blender_mutation_id="mut-scale"
    )
    emit(
        approved2,
        ev.OperationSucceeded,
        0,
        operation_id="scale",
        mcp_call_id="mcp-scale",
        blender_mutation_id="mut-scale",
        receipt=ok,
    )
    emit(
        approved2,
        ev.OperationStarted,
        1,
        operation_id="gold",
        tool_name="material.assign",
        mcp_call_id="mcp-gold",
        scene_hash_before="h4",
    )
    bad = _receipt(
        ops2[1],
        "failed",
        "h4",
        "h5-partial",
        mcp_call_id="mcp-gold",
        blender_mutation_id="mut-gold",
        error_code="MATERIAL_NOT_FOUND",
        message="no material named Gold",
    )
    broke = failure(
        "TOOL_ERROR", "create the material first", repair=[("gold", "insert_precondition")]
    )
    emit(
        approved2,
        ev.OperationFailed,
        1,
        operation_id="gold",
        mcp_call_id="mcp-gold",
        receipt=bad,
        failure=broke,
    )
    emit(
        approved2,
        ev.OperationRolledBack,
        1,
        operation_id="gold",
        mcp_call_id="mcp-gold",
        method="checkpoint",
        scene_hash="h4",
    )
    executed2 = emit(
        approved2,
        ev.Executed,
        scene_id="shot010",
        receipts=[ok, bad],
        scene_hash="h4",
        blend_path=None,
        failure=broke,
        message="gold failed: no material named Gold",
    )
    emit(executed2, ev.RunFailed, failure=broke, message="gold failed: no material named Gold")
    return out


def load_history() -> list[ev.AnyEvent]:
    return [ev.decode_event(line.encode()) for line in HISTORY.read_text().splitlines()]


# -- tests --------------------------------------------------------------------------------


async def _replay(store: Any, events: list[ev.AnyEvent]) -> None:
    for seq, event in enumerate(events, start=1):
        await apply_event(store, event, seq)


async def test_recorded_history_when_read_decodes_with_current_contracts() -> None:
    assert load_history() == generate_history()


async def test_apply_when_same_seq_delivered_twice_dump_is_identical(store: Any) -> None:
    events = load_history()
    await _replay(store, events[:12])
    before = await store.dump()
    assert (await apply_event(store, events[11], 12)).new is False
    assert (await apply_event(store, events[3], 4)).new is False
    assert await store.dump() == before
    assert before["tracking"] == [{"last_seq": 12}]


async def test_apply_when_redelivered_after_later_events_skips_it(store: Any) -> None:
    events = load_history()
    await _replay(store, events)
    first = await store.dump()
    await _replay(store, events)  # a consumer reset redelivers the whole log
    assert await store.dump() == first


@pytest.mark.clause(
    "000-§correlation.2",
    "000-§correlation.3",
    "000-§correlation.6",
    "000-§audit-record.2",
    "000-§audit-record.3",
    "000-§audit-record.4",
    "000-§audit-record.5",
    "000-§audit-record.6",
    "000-§audit-record.7",
    "000-§audit-record.8",
    "000-§audit-record.9",
    "000-§audit-record.10",
    "002-§audit.2",
    "002-§audit.3",
    "002-§audit.4",
    "002-§audit.5",
    "002-§audit.6",
    "002-§audit.7",
    "002-§audit.8",
)
@pytest.mark.clause("002-§core-loop.13")
async def test_recorded_history_when_replayed_produces_expected_rows(store: Any) -> None:
    events = load_history()
    await _replay(store, events)
    dump = await store.dump()
    runs = {r["run_id"]: r for r in dump["runs"]}
    ring, mat = runs["run-ring"], runs["run-mat"]
    assert ring == {
        "run_id": "run-ring",
        "request_id": "gem-req-ring",
        "thread_id": "thread-ana",
        "user": "ana",
        "scene_id": "shot010",
        "prompt": "add a torus named Ring, bevel it and delete the Cube",
        "state": "completed",
        "planner": "rules",
        "model": None,
        "error_code": None,
        "message": "4 of 4 operations applied to scene shot010",
        "blend_path": "scenes/shot010/h3.blend",
        "scene_hash": "h3",
        "created_at": T0,
        "updated_at": events[15].at,
        "plan_words": None,  # a request in words is listed by its words
    }
    assert (mat["state"], mat["error_code"], mat["message"], mat["scene_hash"]) == (
        "failed",
        "TOOL_ERROR",
        "gold failed: no material named Gold",
        "h4",
    )
    actions = {(a["run_id"], a["operation_id"]): a for a in dump["actions"]}
    assert {k[1]: (a["state"], a["decision"]) for k, a in actions.items()} == {
        "inspect": ("completed", "allow"),
        "ring": ("completed", "allow"),
        "bevel": ("completed", "allow"),
        "drop_cube": ("completed", "require_approval"),
        "scale": ("completed", "allow"),
        "gold": ("failed", "allow"),
    }
    assert actions["run-ring", "inspect"]["blender_mutation_id"] is None
    assert actions["run-mat", "gold"] == {
        "run_id": "run-mat",
        "operation_id": "gold",
        "tool_name": "material.assign",
        "safety_level": "safe_write",
        "state": "failed",
        "decision": "allow",
        "mcp_call_id": "mcp-gold",
        "blender_mutation_id": "mut-gold",
        "error_code": "TOOL_ERROR",
        "approval_id": None,
        "input_hash": canonical_hash({"object": "Ring", "name": "Gold"}),
        "created_at": events[18].at,  # planned
        "updated_at": events[25].at,  # rolled back: its last change
    }
    records = [
        (
            r["run_id"],
            r["operation_id"],
            r["status"],
            r["blender_mutation_id"],
            r["scene_hash_before"],
            r["scene_hash_after"],
        )
        for r in dump["audit_records"]
    ]
    assert records == [
        ("run-ring", "drop_cube", "succeeded", "mut-drop_cube", "h0", "h1"),
        ("run-ring", "inspect", "succeeded", None, "h1", "h1"),
        ("run-ring", "ring", "succeeded", "mut-ring", "h1", "h2"),
        ("run-ring", "bevel", "succeeded", "mut-bevel", "h2", "h3"),
        ("run-mat", "scale", "succeeded", "mut-scale", "h3", "h4"),
        ("run-mat", "gold", "failed", "mut-gold", "h4", "h5-partial"),
        ("run-mat", "gold", "rolled_back", "mut-gold", "h5-partial", "h4"),
    ]
    # spec 002 §9: the decision, approval and input behind each record
    assert [(r["decision"], r["approval_id"], r["scene_id"]) for r in dump["audit_records"]][
        :2
    ] == [("require_approval", "appr-1", "shot010"), ("allow", None, "shot010")]
    gold_failed = dump["audit_records"][-2]
    assert (gold_failed["error_code"], gold_failed["input_hash"]) == (
        "MATERIAL_NOT_FOUND",  # the tool's own code (spec 001), sharper than the run's
        canonical_hash({"object": "Ring", "name": "Gold"}),
    )
    rollback = dump["audit_records"][-1]
    assert (
        rollback["tool_name"],
        rollback["safety_level"],
        rollback["request_id"],
        rollback["mcp_call_id"],
        rollback["user"],
    ) == ("material.assign", "safe_write", "gem-req-mat", "mcp-gold", "ana")
    assert [t["type"] for t in dump["timeline"]][:6] == [
        "run.requested",
        "run.planned",
        "run.policy_decided",
        "run.approval_requested",
        "run.approval_resolved",
        "run.approved",
    ]
    assert len(dump["timeline"]) == len(events) - 1  # every run event; not the dead letter
    assert dump["timeline"][3]["detail"] == (
        "approval needed for drop_cube: object.delete is destructive"
    )
    assert dump["dead_letters"] == [
        {
            "stream_seq": 17,
            "consumer": "guardians",
            "subject": "bm.run.bad.executed",
            "failed_seq": 7,
            "deliveries": 1,
            "reason": "undecodable message: truncated",
            "at": events[16].at,
        }
    ]
    assert dump["tracking"] == [{"last_seq": len(events)}]


async def test_runs_when_two_runs_lists_newest_first(store: Any) -> None:
    await _replay(store, load_history())
    assert [r["run_id"] for r in await store.runs(10)] == ["run-mat", "run-ring"]
    assert [r["run_id"] for r in await store.runs(1)] == ["run-mat"]


async def test_runs_when_filtered_by_user_lists_only_theirs(store: Any) -> None:
    await _replay(store, load_history())
    assert [r["run_id"] for r in await store.runs(10, "ana")] == ["run-mat", "run-ring"]
    assert [r["run_id"] for r in await store.runs(1, "ana")] == ["run-mat"]
    assert await store.runs(10, "ben") == []


async def test_run_when_recorded_history_replayed_returns_its_rows_only(store: Any) -> None:
    await _replay(store, load_history())
    detail = await store.run("run-ring")
    assert detail is not None and detail["run"]["run_id"] == "run-ring"
    for view in ("actions", "audit_records", "timeline"):
        assert detail[view] and {r["run_id"] for r in detail[view]} == {"run-ring"}
    seqs = [r["stream_seq"] for r in detail["timeline"]]
    assert seqs == sorted(seqs)
    assert await store.run("run-none") is None


if __name__ == "__main__":
    HISTORY.parent.mkdir(parents=True, exist_ok=True)
    HISTORY.write_text("".join(ev.encode_event(e).decode() + "\n" for e in generate_history()))


@pytest.mark.clause("002-§errors.6")
async def test_store_when_debug_logging_is_on_keeps_prompts_out_of_the_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    store = await SqliteStore.open(tmp_path / "quiet.db")
    try:
        await _replay(store, load_history()[:3])
        assert (await store.run("run-ring") or {})["run"]["prompt"].startswith("add a torus")
    finally:
        await store.close()
    assert "add a torus" not in caplog.text
