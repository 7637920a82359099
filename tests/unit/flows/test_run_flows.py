"""One run through planner, policy, executor, guardians and audit on the in-memory bus:
what a request leads to, in what order, with what contents."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from contracts import inspection
from contracts.events import Executed, RunCompleted
from services.audit.app import BATCH
from services.audit.handlers import AuditHandlers
from services.audit.store import SqliteStore
from services.executor.memory import StaticCatalog
from services.planner.handlers import PlannerHandlers, filter_subjects
from services.runtime.service.consumer_spec import ConsumerSpec
from tests.support.catalog_fixture import CATALOG
from tests.support.memory_mesh import MemoryMesh

FLAGSHIP = "add a cube named Box at 0 0 1, then add a uv sphere named Ball at 3 0 1"


def op(
    op_id: str,
    tool: str,
    args: dict[str, Any],
    deps: list[str] | None = None,
    level: str = "safe_write",
) -> dict[str, Any]:
    return {
        "operation_id": op_id,
        "tool_name": tool,
        "args": args,
        "depends_on": deps or [],
        "safety_level": level,
    }


async def test_plain_request_when_run_goes_through_every_service_in_order(
    mesh: MemoryMesh,
) -> None:
    result = await mesh.run("s1", FLAGSHIP)
    assert result.status == "completed", result
    assert await mesh.kinds(result.run_id) == [
        "run.requested",
        "run.planned",
        "run.policy_decided",
        "run.approved",
        "run.op_started",
        "run.op_succeeded",
        "run.op_started",
        "run.op_succeeded",
        "run.executed",
        "run.gates_evaluated",
        "run.completed",
    ]
    assert [(r.tool_name, r.status) for r in result.receipts] == [
        ("object.create", "succeeded"),
        ("object.create", "succeeded"),
    ]
    assert result.gates is not None and result.gates.success
    assert mesh.bridge.scene["Ball"]["location"] == [3, 0, 1]
    assert result.blend_path is not None
    assert await asyncio.to_thread(Path(result.blend_path).is_file)
    assert (await mesh.store.head("s1")).revision == 1  # type: ignore[union-attr]
    assert mesh.bus.dead_letters() == [] and mesh.bus.timers() == []


async def test_audit_views_when_built_again_from_the_whole_log_equal_the_live_ones(
    mesh: MemoryMesh, tmp_path: Path
) -> None:
    """The live consumer applied each event as it came, between the other services' own;
    one bound after the runs applies the whole log at once, in batches: same views."""
    await mesh.run("s1", FLAGSHIP)
    await mesh.run("s1", "move Ghost to 1 2 3")
    waiting = await mesh.run("s1", "delete Box")
    await mesh.resolve(waiting.run_id, "reject")
    assert mesh.views is not None
    again = await SqliteStore.open(tmp_path / "again.db")
    try:
        handlers = AuditHandlers(again)
        mesh.bus.add(
            ConsumerSpec(
                "audit-again", [], handlers.on_event, batch=BATCH, batch_handler=handlers.on_events
            )
        )
        await mesh.bus.run_until_quiet()
        live = await mesh.views.dump()
        assert live["runs"] and live["audit_records"]
        assert await again.dump() == live
        assert await again.last_seq() == len(mesh.bus.log)
    finally:
        await again.close()


async def test_plain_request_when_run_ends_audit_views_show_it_and_its_records(
    mesh: MemoryMesh,
) -> None:
    result = await mesh.run("s1", FLAGSHIP)
    assert mesh.views is not None
    view = await mesh.views.run(result.run_id)
    assert view is not None and view["run"]["state"] == "completed"
    assert [(r["operation_id"], r["status"]) for r in view["audit_records"]] == [
        ("op01", "succeeded"),
        ("op02", "succeeded"),
        ("gates@1", "gates_passed"),
    ]
    assert [row["type"] for row in view["timeline"]] == await mesh.kinds(result.run_id)


@pytest.mark.clause("000-§executor-guarantees.11", "000-§executor-guarantees.13")
async def test_failing_op_when_run_rolls_back_and_names_the_operation(mesh: MemoryMesh) -> None:
    result = await mesh.run("rollback", "add a cube named Here, then move Ghost to 1 2 3")
    assert result.status == "failed"
    assert result.failure is not None and result.failure.error_code != "GATES_FAILED"
    assert result.failure.minimal_repair_plan[0].operation_id == "op02"
    created, failed = result.receipts
    assert created.status == "succeeded" and failed.status == "rolled_back"
    assert failed.scene_hash_after == failed.scene_hash_before == result.scene_hash
    assert "Here" in mesh.bridge.scene  # the operation boundary keeps what succeeded
    assert mesh.views is not None
    view = await mesh.views.run(result.run_id)
    assert view is not None and view["run"]["state"] == "failed"
    ops = [r["status"] for r in view["audit_records"] if not r["operation_id"].startswith("gates")]
    assert ops == ["succeeded", "failed", "rolled_back"]


@pytest.mark.clause("000-§executor-guarantees.9")
async def test_run_boundary_when_an_op_fails_leaves_the_scene_as_before_the_run(
    mesh: MemoryMesh,
) -> None:
    base = await mesh.run("whole", "add a cube named Base")
    assert base.status == "completed"
    head = await mesh.store.head("whole")
    plan = {
        "request_id": "whole-1",
        "operations": [
            op("op1", "object.create", {"primitive": "cube", "name": "Extra"}),
            op("op2", "object.transform", {"name": "Ghost", "location": [1, 1, 1]}, ["op1"]),
        ],
    }
    result = await mesh.run("whole", plan=plan, rollback_boundary="run")
    assert result.status == "failed"
    assert [r.status for r in result.receipts] == ["rolled_back", "rolled_back"]
    assert await mesh.store.head("whole") == head  # nothing committed
    assert "Extra" not in mesh.bridge.scene and "Base" in mesh.bridge.scene


@pytest.mark.parametrize(
    ("name", "operations", "code"),
    [
        (
            "cycle",
            [
                op("a", "scene.snapshot", {}, ["b"], "read_only"),
                op("b", "scene.snapshot", {}, ["a"], "read_only"),
            ],
            "GRAPH_CYCLE",
        ),
        (
            "missing",
            [op("a", "object.create", {"primitive": "cube"}, ["nope"])],
            "GRAPH_MISSING_DEPENDENCY",
        ),
        ("unknown_tool", [op("a", "python.exec", {"code": "print(1)"})], "TOOL_UNKNOWN"),
        (
            "extra_property",
            [{**op("a", "object.create", {"primitive": "cube"}), "why": "x"}],
            "SCHEMA_INVALID",
        ),
    ],
)
@pytest.mark.clause("000-§planning.4", "000-§execution.1")
async def test_invalid_plan_when_run_is_rejected_before_policy_and_scene_untouched(
    mesh: MemoryMesh, name: str, operations: list[dict[str, Any]], code: str
) -> None:
    keep = [op("a", "object.create", {"primitive": "cube", "name": "Keep"})]
    base = await mesh.run("guarded", plan={"request_id": f"base-{name}", "operations": keep})
    assert base.status == "completed"
    head = await mesh.store.head("guarded")
    result = await mesh.run("guarded", plan={"request_id": f"bad-{name}", "operations": operations})
    assert result.status == "failed"
    assert result.failure is not None and result.failure.error_code == code
    assert result.receipts == []
    assert await mesh.kinds(result.run_id) == ["run.requested", "run.plan_rejected", "run.failed"]
    assert await mesh.store.head("guarded") == head


async def test_unreadable_request_when_run_fails_quoting_it(mesh: MemoryMesh) -> None:
    result = await mesh.run("words", "add a cube named A, paint it like van gogh")
    assert result.status == "failed"
    assert result.failure is not None and result.failure.error_code == "REQUEST_UNREADABLE"
    assert '"paint it like van gogh"' in result.message
    assert mesh.bridge.calls == []


@pytest.mark.clause("000-§executor-guarantees.1")
async def test_same_request_id_twice_when_submitted_runs_its_operations_once(
    mesh: MemoryMesh,
) -> None:
    plan = {
        "request_id": "once-1",
        "operations": [op("op1", "object.create", {"primitive": "cube", "name": "Once"})],
    }
    first = await mesh.run("twice", plan=plan)
    calls = list(mesh.bridge.calls)
    second = await mesh.run("twice", plan=plan)
    assert first.status == second.status == "completed", second
    assert first.run_id != second.run_id
    assert mesh.bridge.calls == calls  # the journal answered: Blender was not asked again
    assert [r.status for r in second.receipts] == ["skipped_idempotent"]
    assert (await mesh.store.head("twice")).revision == 1  # type: ignore[union-attr]


async def test_the_same_request_event_twice_when_published_is_one_run(mesh: MemoryMesh) -> None:
    request = mesh.request("dup", "add a cube named Dup")
    await mesh.submit(request)
    again = await mesh.submit(request)
    assert again.status == "completed"
    events = await mesh.history(request.run_id)
    assert sum(isinstance(e, Executed) for e in events) == 1
    assert sum(isinstance(e, RunCompleted) for e in events) == 1


async def test_run_when_a_new_planner_hears_the_whole_log_again_gives_no_second_outcome(
    mesh: MemoryMesh,
) -> None:
    result = await mesh.run("replayed", "add a cube named Again")
    assert result.status == "completed"
    before = len(mesh.bus.log)
    # A planner whose consumer was recreated: bound now, it is delivered the log from its
    # start, and asks the log only whether each run ended.
    again = PlannerHandlers(
        catalog=StaticCatalog(CATALOG), history=mesh.bus.history, kinds=mesh.bus.kinds
    )
    mesh.bus.add(ConsumerSpec("planner-again", filter_subjects(mesh.bus.prefix), again.handle))
    assert await mesh.bus.run_until_quiet() > 0
    assert len(mesh.bus.log) == before
    events = await mesh.history(result.run_id)
    assert sum(isinstance(e, RunCompleted) for e in events) == 1


async def test_committed_run_when_inspected_names_its_operations(mesh: MemoryMesh) -> None:
    result = await mesh.run("inspected", "add a cube named Keep, add a cube named Other")
    (executed,) = [e for e in await mesh.history(result.run_id) if isinstance(e, Executed)]
    assert executed.revision == 1 and executed.inspection is not None
    data = await mesh.store.read_inspection(executed.inspection)
    assert data is not None
    doc = inspection.decode(data)
    assert (doc.scene_id, doc.revision, doc.scene_hash) == ("inspected", 1, executed.scene_hash)
    assert sorted(o.name for o in doc.objects) == ["Keep", "Other"]
    assert doc.run is not None and doc.run.approved_by == "policy"
