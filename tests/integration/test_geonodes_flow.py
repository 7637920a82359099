"""Geometry Nodes responses (spec 004) through the whole mesh: real nats-server, real bpy,
the bridge's gn.* tools and the node catalog its Blender publishes."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from contracts.events import Planned
from contracts.geonodes import step_of
from contracts.python_steps import code_sha256
from contracts.receipts import RunResult
from services.doors.cli.mesh import Mesh
from services.doors.core.client import CodeNotQuoted, MeshClient
from services.doors.core.requests import build_request
from services.runtime.nats.history import read_run
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.fresh_bpy import read_with_bpy
from tests.support.geonode_fixture import EXAMPLE_9
from tests.support.meshes import mesh_fixture

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

INSPECT = """
import json, sys, bpy
bpy.ops.wm.open_mainfile(filepath=sys.argv[1], load_ui=False, use_scripts=False)
deps = bpy.context.evaluated_depsgraph_get()
out = {}
for o in bpy.data.objects:
    mods = {m.name: (m.node_group.name if m.type == "NODES" and m.node_group else m.type)
            for m in o.modifiers}
    instances = sum(1 for i in deps.object_instances
                    if i.is_instance and i.parent and i.parent.original == o)
    out[o.name] = {"modifiers": mods, "instances": instances,
                   "location": [round(v, 4) for v in o.location]}
sys.__stdout__.write("RESULT " + json.dumps(out) + "\\n")
"""


async def inspect_blend(path: str) -> dict[str, Any]:
    """Each object's modifiers (a NODES one by its node group) and how many instances its
    evaluated geometry holds, read in a fresh bpy process."""
    found: dict[str, Any] = await read_with_bpy(INSPECT, path)
    return found


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    # No picture is looked at here: a Blender rendering every commit would only compete
    # with the runs for the CPU, and a stop would wait for its last render.
    return Settings(
        home=tmp_path_factory.mktemp("home"), prefix="bmgeo", user="ana", previews=False
    )


mesh = mesh_fixture(client="test-geonodes")


async def run(
    mesh: tuple[Mesh, Bus], scene: str, prompt: str | None = None, plan: Any = None, **kw: Any
) -> RunResult:
    request = build_request(user="ana", scene_id=scene, prompt=prompt, plan=plan, **kw)
    return await MeshClient(mesh[1]).run(request, timeout=180)


def node_tree(
    step_id: str, obj: str, modifier: str, group: str, *ops: dict[str, Any]
) -> dict[str, Any]:
    return {
        "id": step_id,
        "type": "NODE_TREE",
        "description": f"{step_id} on {obj}",
        "payload": {
            "target": {"object_name": obj, "modifier_name": modifier, "node_group_name": group},
            "operations": list(ops),
        },
    }


def create(node_id: str, bl_idname: str, x: int = 0) -> dict[str, Any]:
    return {"op": "create_node", "node_id": node_id, "bl_idname": bl_idname, "location": [x, 0]}


def value(node_id: str, socket: str, v: Any) -> dict[str, Any]:
    return {"op": "set_input_default", "node_id": node_id, "socket": socket, "value": v}


def link(a: str, out: str, b: str, into: str) -> dict[str, Any]:
    return {
        "op": "link",
        "from": {"node_id": a, "socket": out},
        "to": {"node_id": b, "socket": into},
    }


def response(*steps: dict[str, Any]) -> dict[str, Any]:
    return {"version": "1.0", "steps": list(steps), "done": True, "final_message": "done"}


SCATTER = response(
    node_tree(
        "step_1",
        "Ground",
        "GeometryNodes",
        "GN_Scatter",
        create("points", "GeometryNodeDistributePointsOnFaces", 200),
        value("points", "Density", 3.0),
        link("group_input", "Geometry", "points", "Mesh"),
        create("rock", "GeometryNodeObjectInfo", 200),
        value("rock", "Object", "Rock"),
        value("rock", "As Instance", True),
        create("instances", "GeometryNodeInstanceOnPoints", 400),
        link("points", "Points", "instances", "Points"),
        link("rock", "Geometry", "instances", "Instance"),
        create("join", "GeometryNodeJoinGeometry", 600),
        link("group_input", "Geometry", "join", "Geometry"),
        link("instances", "Instances", "join", "Geometry"),
        link("join", "Geometry", "group_output", "Geometry"),
    )
)


@pytest.mark.clause("004-§example.1")
async def test_example_9_when_run_completes_with_its_safe_python_step(
    mesh: tuple[Mesh, Bus],
) -> None:
    setup = await run(mesh, "example9", "add a plane named Plane")
    assert setup.status == "completed", setup
    result = await run(mesh, "example9", plan=copy.deepcopy(EXAMPLE_9))
    assert result.status == "completed", (result.failure, result.message)
    assert result.gates is not None and result.gates.success, result.gates
    python = result.receipts[-1]
    assert (python.operation_id, python.tool_name) == ("step_3.01", "python.safe")
    assert python.status == "succeeded" and python.result is not None
    assert python.result["output"] == "Plane\n" and python.result["mode"] == "safe"
    # It only read the scene: the scene after it is the scene before it.
    assert python.scene_hash_after == python.scene_hash_before
    scene = await inspect_blend(str(result.blend_path))
    assert scene["Plane"]["modifiers"] == {"GeometryNodes": "GN_Scatter"}


async def test_trusted_python_step_when_approved_with_its_hash_runs_real_bpy(
    mesh: tuple[Mesh, Bus],
) -> None:
    code = "import bpy\nbpy.data.objects['Box'].location.z = 3.5\nprint(bpy.app.version_string)"
    step = {"id": "step_1", "type": "PYTHON", "payload": {"mode": "trusted", "code": code}}
    plan = {"version": "1.0", "steps": [step], "done": True, "final_message": "raised Box"}
    assert (await run(mesh, "trusted", "add a cube named Box")).status == "completed"
    waiting = await run(mesh, "trusted", plan=plan)
    assert waiting.status == "awaiting_confirmation", (waiting.failure, waiting.message)
    client = MeshClient(mesh[1])
    unquoted = f"must quote the sha256 of its code; missing {code_sha256(code)} (operation "
    with pytest.raises(CodeNotQuoted, match=re.escape(unquoted)):
        await client.resolve(waiting.run_id, "approve_once", "ana", timeout=60)
    result = await client.resolve(
        waiting.run_id, "approve_once", "ana", timeout=180, code_sha256=[code_sha256(code)]
    )
    assert result.status == "completed", (result.failure, result.message)
    (receipt,) = result.receipts
    assert receipt.tool_name == "python.trusted" and receipt.result is not None
    assert receipt.result["output"].startswith("5.0")
    assert (await inspect_blend(str(result.blend_path)))["Box"]["location"][2] == 3.5
    assert result.gates is not None and result.gates.success, result.gates


async def test_safe_python_step_when_code_fails_rolls_back_and_names_the_step(
    mesh: tuple[Mesh, Bus],
) -> None:
    assert (await run(mesh, "pyfail", "add a cube named Box")).status == "completed"
    before = await inspect_blend(str(mesh[0].settings.scenes_dir / "pyfail.blend"))
    code = "import bpy\nbpy.data.objects['Box'].location.x = 9\nimport os"
    step = {"id": "step_1", "type": "PYTHON", "payload": {"code": code}}
    plan = {"version": "1.0", "steps": [step], "done": True, "final_message": "x"}
    result = await run(mesh, "pyfail", plan=plan)
    assert result.status == "failed" and result.failure is not None
    assert result.failure.error_code == "POLICY_BLOCKED", result.failure
    assert "step_1" in result.message and "os" in result.message
    after = await inspect_blend(str(mesh[0].settings.scenes_dir / "pyfail.blend"))
    assert after == before


async def test_scatter_by_node_tree_when_run_completes_with_gates_passing(
    mesh: tuple[Mesh, Bus],
) -> None:
    setup = await run(
        mesh,
        "scatter",
        "add a plane named Ground scaled 4, add a cube named Rock at 0 0 5 scaled 0.1",
    )
    assert setup.status == "completed", setup
    result = await run(mesh, "scatter", plan=copy.deepcopy(SCATTER))
    assert result.status == "completed", (result.failure, result.message)
    assert result.gates is not None and result.gates.success, result.gates
    assert {step_of(r.operation_id) for r in result.receipts} == {"step_1"}
    assert [r.tool_name for r in result.receipts][:2] == ["gn.ensure_target", "gn.add_node"]
    assert all(r.status == "succeeded" for r in result.receipts)
    scene = await inspect_blend(str(result.blend_path))
    assert scene["Ground"]["modifiers"] == {"GeometryNodes": "GN_Scatter"}
    assert scene["Ground"]["instances"] > 0


async def test_scatter_phrase_when_run_offline_completes_with_gates_passing(
    mesh: tuple[Mesh, Bus],
) -> None:
    result = await run(
        mesh,
        "phrase",
        "add a plane named Field scaled 5, add a cube named Pebble at 0 0 3 scaled 0.1, "
        "then scatter 20 Pebble on Field",
    )
    assert result.status == "completed", (result.failure, result.message)
    assert result.gates is not None and result.gates.success, result.gates
    assert step_of(result.receipts[-1].operation_id) == "op03"
    scene = await inspect_blend(str(result.blend_path))
    assert scene["Field"]["modifiers"] == {"Scatter Pebble": "Scatter Pebble on Field"}
    assert 5 <= scene["Field"]["instances"] <= 60  # about 20: a random count, a fixed seed


@pytest.mark.clause("004-§validation.4", "004-§contract.2")
async def test_response_requiring_verification_when_run_completes_only_after_gates_pass(
    mesh: tuple[Mesh, Bus],
) -> None:
    setup = await run(mesh, "verified", "add a plane named Ground, add a cube named Rock at 0 0 5")
    assert setup.status == "completed", setup
    plan = {**copy.deepcopy(SCATTER), "meta": {"requires_gate_verification": True}}
    result = await run(mesh, "verified", plan=plan)
    assert result.status == "completed", (result.failure, result.message)
    assert result.gates is not None and result.gates.success
    events = await read_run(mesh[1].js, "bmgeo", result.run_id)
    (planned,) = [e for e in events if isinstance(e, Planned)]
    assert planned.requires_gate_verification
    kinds = [type(e).__name__ for e in events]
    assert kinds.index("GatesEvaluated") < kinds.index("RunCompleted")


@pytest.mark.clause("004-§contract.3")
async def test_response_with_no_steps_and_done_when_run_changes_nothing_and_says_so(
    mesh: tuple[Mesh, Bus],
) -> None:
    empty = {**response(), "final_message": "Nothing to change: the graph is complete."}
    result = await run(mesh, "nothing", plan=empty)
    assert result.status == "completed", (result.failure, result.message)
    assert result.message == "Nothing to change: the graph is complete."
    assert result.receipts == [] and result.blend_path is None
    events = await read_run(mesh[1].js, "bmgeo", result.run_id)
    assert [type(e).__name__ for e in events] == ["RunRequested", "Replied", "RunCompleted"]


def five_steps() -> dict[str, Any]:
    """Five steps on one tree, the third on an object that does not exist: it passes every
    check before the run (a NODE_TREE step may target any object) and fails as it runs."""
    sub = "GeometryNodeSubdivisionSurface"
    return response(
        node_tree("step_1", "Box", "GN1", "G1", create("s", sub)),
        node_tree("step_2", "Box", "GN1", "G1", link("group_input", "Geometry", "s", "Mesh")),
        node_tree("step_3", "Nowhere", "GN1", "G3"),
        node_tree("step_4", "Box", "GN1", "G1", link("s", "Mesh", "group_output", "Geometry")),
        node_tree("step_5", "Box", "GN1", "G1", value("s", "Level", 1)),
    )


@pytest.mark.parametrize(
    ("boundary", "before_step_3", "modifiers"),
    [("run", {"rolled_back"}, {}), ("operation", {"succeeded"}, {"GN1": "G1"})],
)
@pytest.mark.clause("004-§multi-step.2", "004-§multi-step.3")
async def test_failure_in_step_3_of_5_when_run_names_step_3_and_rolls_back(
    mesh: tuple[Mesh, Bus], boundary: str, before_step_3: set[str], modifiers: dict[str, str]
) -> None:
    scene = f"fails-{boundary}"
    setup = await run(mesh, scene, "add a cube named Box")
    assert setup.status == "completed", setup
    result = await run(mesh, scene, plan=five_steps(), rollback_boundary=boundary)
    assert result.status == "failed"
    assert result.failure is not None
    assert result.failure.retry_hint.startswith("step step_3 failed: step_3.01 (gn.ensure_target)")
    assert result.message.startswith("step step_3 failed")
    assert [s.operation_id for s in result.failure.minimal_repair_plan] == ["step_3.01"]
    by_step: dict[str | None, set[str]] = {}
    for r in result.receipts:
        by_step.setdefault(step_of(r.operation_id), set()).add(r.status)
    # The run's boundary decides whether steps 1 and 2 are undone with the failed one.
    assert by_step["step_1"] == by_step["step_2"] == before_step_3
    assert by_step["step_3"] == {"rolled_back"}
    assert by_step["step_4"] == by_step["step_5"] == {"skipped"}
    events = await read_run(mesh[1].js, mesh[1].prefix, result.run_id)
    planned = next(e for e in events if isinstance(e, Planned))
    assert planned.planner == "plan" and len(planned.operation_set.operations) == 9
    head = mesh[0].settings.scenes_dir / f"{scene}.blend"
    assert (await inspect_blend(str(head)))["Box"]["modifiers"] == modifiers


async def test_response_when_a_socket_is_misspelt_is_refused_before_anything_runs(
    mesh: tuple[Mesh, Bus],
) -> None:
    plan = response(
        node_tree(
            "step_1",
            "Box",
            "GN",
            "G",
            create("s", "GeometryNodeSubdivisionSurface"),
            value("s", "Levels", 2),
        )
    )
    result = await run(mesh, "misspelt", plan=plan)
    assert result.status == "failed" and result.receipts == []
    assert result.failure is not None and result.failure.error_code == "ARGS_INVALID"
    assert "did you mean 'Level'" in result.failure.retry_hint
    assert result.failure.minimal_repair_plan[0].operation_id == "step_1.03"
