"""Issue-level behaviour of one run through the whole mesh: real nats-server, real bpy."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from contracts import inspection
from contracts.events import Executed
from contracts.receipts import RunResult
from services.audit import client as audit
from services.doors.cli.mesh import Mesh
from services.doors.core.client import MeshClient
from services.doors.core.requests import build_request
from services.executor.adapters.previews import ObjectStorePreviews
from services.executor.client import SceneFiles
from services.executor.domain.preview_worker import PREVIEW_SIZE
from services.runtime.nats.history import read_run
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.meshes import mesh_fixture
from tests.support.signing import register

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

FLAGSHIP = (
    "add a cube named Box at 0 0 1, add a bevel modifier to Box, "
    "then add a uv sphere named Ball at 3 0 1"
)

INSPECT = """
import json, sys, bpy
bpy.ops.wm.open_mainfile(filepath=sys.argv[1], load_ui=False, use_scripts=False)
out = {o.name: {"location": [round(v, 5) for v in o.location],
                "modifiers": [m.type for m in o.modifiers]} for o in bpy.data.objects}
sys.__stdout__.write("RESULT " + json.dumps(out) + "\\n")
"""


async def inspect_blend(path: str) -> dict[str, Any]:
    """Open a .blend in a fresh bpy process (the test process never imports bpy).

    Awaited, not run blocking: the mesh shares this event loop, and a loop stalled for the
    seconds bpy takes to start would starve its services' acks and heartbeats.
    """
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        INSPECT,
        path,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    assert proc.returncode == 0, err.decode(errors="replace")
    line = next(x for x in out.decode().splitlines() if x.startswith("RESULT "))
    return json.loads(line.removeprefix("RESULT "))


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    home = tmp_path_factory.mktemp("home")
    register(home, "ben", approver=True)  # ben approves ana's runs below: the policy checks
    return Settings(home=home, prefix="bmflow", user="ana")


mesh = mesh_fixture()


async def run(
    mesh: tuple[Mesh, Bus], scene: str, prompt: str | None = None, plan: Any = None, **kw: Any
) -> RunResult:
    request = build_request(user="ana", scene_id=scene, prompt=prompt, plan=plan, **kw)
    return await MeshClient(mesh[1]).run(request, timeout=120)


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def scene_file(mesh: tuple[Mesh, Bus], scene: str) -> Path:
    return mesh[0].settings.scenes_dir / f"{scene}.blend"


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


async def test_flagship_request_when_run_saves_blend_with_box_and_ball(
    mesh: tuple[Mesh, Bus],
) -> None:
    result = await run(mesh, "flagship", FLAGSHIP)
    assert result.status == "completed", result
    assert [r.tool_name for r in result.receipts] == [
        "object.create",
        "modifier.add",
        "object.create",
    ]
    assert all(r.status == "succeeded" for r in result.receipts)
    assert result.blend_path
    assert await asyncio.to_thread(Path(result.blend_path).exists)
    scene = await inspect_blend(result.blend_path)
    assert scene["Box"] == {"location": [0.0, 0.0, 1.0], "modifiers": ["BEVEL"]}
    assert scene["Ball"]["location"] == [3.0, 0.0, 1.0]


async def test_completed_run_when_committed_stores_preview_png(mesh: tuple[Mesh, Bus]) -> None:
    result = await run(mesh, "pictured", "add a cube named Box")
    assert result.status == "completed", result
    bus = mesh[1]
    previews = ObjectStorePreviews(bus.js, bus.prefix)
    png = None
    # Rendered after the result went out, by a Blender at the lowest CPU priority that
    # may still be starting: on a busy machine that took more than 10 s.
    for _ in range(600):
        png = await previews.get("pictured")
        if png is not None:
            break
        await asyncio.sleep(0.1)
    assert png is not None and png.startswith(b"\x89PNG")
    width, height = PREVIEW_SIZE
    assert png[16:24] == width.to_bytes(4, "big") + height.to_bytes(4, "big")
    assert result.blend_path and Path(result.blend_path).with_suffix(".png").read_bytes() == png


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
async def test_invalid_plan_when_run_is_rejected_and_scene_untouched(
    mesh: tuple[Mesh, Bus], name: str, operations: list[dict[str, Any]], code: str
) -> None:
    base = await run(
        mesh,
        "guarded",
        plan={
            "request_id": f"base-{name}",
            "operations": [op("a", "object.create", {"primitive": "cube", "name": f"Keep_{name}"})],
        },
    )
    assert base.status == "completed"
    before = file_digest(scene_file(mesh, "guarded"))
    result = await run(
        mesh, "guarded", plan={"request_id": f"bad-{name}", "operations": operations}
    )
    assert result.status == "failed"
    assert result.failure is not None and result.failure.error_code == code
    assert result.receipts == []
    assert file_digest(scene_file(mesh, "guarded")) == before


async def test_destructive_op_when_approved_completes(mesh: tuple[Mesh, Bus]) -> None:
    await run(mesh, "approve", "add a cube named Doomed")
    result = await run(mesh, "approve", "delete Doomed")
    assert result.status == "awaiting_confirmation"
    assert result.pending_operations == ["op01"]
    done = await MeshClient(mesh[1]).resolve(result.run_id, "approve_once", "ben", timeout=120)
    assert done.status == "completed"
    assert done.receipts[0].tool_name == "object.delete"
    assert "Doomed" not in await inspect_blend(str(done.blend_path))


async def test_committed_run_when_a_person_approved_names_them_in_its_inspection(
    mesh: tuple[Mesh, Bus],
) -> None:
    await run(mesh, "inspected", "add a cube named Keep, add a cube named Doomed")
    result = await run(mesh, "inspected", "delete Doomed")
    done = await MeshClient(mesh[1]).resolve(result.run_id, "approve_once", "ben", timeout=120)
    assert done.status == "completed", done
    bus = mesh[1]
    (executed,) = [
        e for e in await read_run(bus.js, bus.prefix, done.run_id) if isinstance(e, Executed)
    ]
    assert executed.revision == 2 and executed.inspection is not None
    data = await SceneFiles(bus.js, bus.prefix).inspection(executed.inspection)
    assert data is not None
    doc = inspection.decode(data)
    assert (doc.scene_id, doc.revision, doc.scene_hash) == ("inspected", 2, executed.scene_hash)
    assert [o.name for o in doc.objects] == ["Keep"]
    assert doc.run is not None and doc.run.approved_by == "ben"
    assert [(a.decision, a.resolved_by) for a in doc.run.approvals] == [("approve_once", "ben")]
    assert [o.tool_name for o in doc.run.operations] == ["object.delete"]


async def test_destructive_op_when_rejected_leaves_scene_as_it_was(mesh: tuple[Mesh, Bus]) -> None:
    await run(mesh, "reject", "add a cube named Precious")
    before = file_digest(scene_file(mesh, "reject"))
    result = await run(mesh, "reject", "delete Precious")
    assert result.status == "awaiting_confirmation"
    done = await MeshClient(mesh[1]).resolve(result.run_id, "reject", "ben", timeout=120)
    assert done.status == "failed"
    assert done.failure is not None and done.failure.error_code == "APPROVAL_REJECTED"
    assert file_digest(scene_file(mesh, "reject")) == before
    assert "Precious" in await inspect_blend(str(scene_file(mesh, "reject")))


async def test_destructive_op_when_pre_approved_runs_without_waiting(
    mesh: tuple[Mesh, Bus],
) -> None:
    await run(mesh, "pre", "add a cube named Gone")
    result = await run(mesh, "pre", "delete Gone", pre_approved=True)
    assert result.status == "completed"


@pytest.mark.clause("000-§executor-guarantees.11", "000-§executor-guarantees.13")
async def test_failing_op_when_run_rolls_back_and_names_the_operation(
    mesh: tuple[Mesh, Bus],
) -> None:
    result = await run(mesh, "rollback", "add a cube named Here, then move Ghost to 1 2 3")
    assert result.status == "failed"
    assert result.failure is not None
    assert result.failure.minimal_repair_plan[0].operation_id == "op02"
    created, failed = result.receipts
    assert created.status == "succeeded" and failed.status == "rolled_back"
    assert failed.scene_hash_after == failed.scene_hash_before == result.scene_hash


async def test_unreadable_request_when_run_fails_quoting_it(mesh: tuple[Mesh, Bus]) -> None:
    result = await run(mesh, "words", "add a cube named A, paint it like van gogh")
    assert result.status == "failed"
    assert result.failure is not None and result.failure.error_code == "REQUEST_UNREADABLE"
    assert '"paint it like van gogh"' in result.message


async def test_audit_views_when_rebuilt_equal_live_views(mesh: tuple[Mesh, Bus]) -> None:
    result = await run(mesh, "audited", "add a cube named Audited, then move Nobody to 1 1 1")
    nc, prefix = mesh[1].nc, mesh[0].settings.prefix
    view = await audit.query_run(nc, prefix, result.run_id)
    assert view.run.state == "failed"
    records = view.audit_records
    assert [r.status for r in records] == ["succeeded", "failed", "rolled_back"]
    for record in records:
        for field in (
            "timestamp",
            "request_id",
            "operation_id",
            "mcp_call_id",
            "tool_name",
            "safety_level",
            "status",
            "scene_hash_before",
        ):
            assert getattr(record, field) is not None, field
    assert records[0].blender_mutation_id and records[0].scene_hash_after
    live = await audit.query_dump(nc, prefix)
    assert live["audit_records"] and live["runs"]
    await audit.rebuild(nc, prefix)
    assert await audit.query_dump(nc, prefix) == live
    runs = await audit.query_runs(nc, prefix, limit=100)
    assert result.run_id in [r.run_id for r in runs]


@pytest.mark.clause("000-§executor-guarantees.9")
async def test_run_boundary_when_an_op_fails_leaves_scene_as_before_the_run(
    mesh: tuple[Mesh, Bus],
) -> None:
    await run(mesh, "whole", "add a cube named Base")
    before = file_digest(scene_file(mesh, "whole"))
    # A plan as written: the offline planner would refuse to name Ghost before anything ran.
    plan = {
        "request_id": "whole-1",
        "operations": [
            {
                "operation_id": "op1",
                "tool_name": "object.create",
                "args": {"primitive": "cube", "name": "Extra"},
                "depends_on": [],
                "safety_level": "safe_write",
            },
            {
                "operation_id": "op2",
                "tool_name": "object.transform",
                "args": {"name": "Ghost", "location": [1, 1, 1]},
                "depends_on": ["op1"],
                "safety_level": "safe_write",
            },
        ],
    }
    result = await run(mesh, "whole", plan=plan, rollback_boundary="run")
    assert result.status == "failed"
    assert [r.status for r in result.receipts] == ["rolled_back", "rolled_back"]
    assert file_digest(scene_file(mesh, "whole")) == before
    assert "Extra" not in await inspect_blend(str(scene_file(mesh, "whole")))
