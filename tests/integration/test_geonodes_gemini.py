"""The Gemini planner answering with Geometry Nodes responses (``geonodes_json``, ADR 0008):
the real google-genai client against its local stand-in, real nats-server, real bpy."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from contracts.events import GatesEvaluated, Planned
from services.doors.cli.mesh import Mesh
from services.doors.core.client import MeshClient
from services.doors.core.requests import build_request
from services.runtime.nats.history import read_run
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.gemini_fake import FakeGemini, answer, running
from tests.support.meshes import mesh_fixture

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

PREFIX = "bmgeogem"


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeGemini]:
    with running() as server, pytest.MonkeyPatch.context() as env:
        env.setenv("GEMINI_API_KEY", "test-key-geonodes")
        env.delenv("GOOGLE_API_KEY", raising=False)
        env.delenv("GOOGLE_GEMINI_BASE_URL", raising=False)
        yield server


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory, fake: FakeGemini) -> Settings:
    env = {"BLENDMESH_GEMINI_BASE_URL": fake.url, "BLENDMESH_GEMINI_MAX_RETRIES": "0"}
    # No picture is looked at here: a Blender rendering every commit would only compete
    # with the runs for the CPU, and a stop would wait for its last render.
    return Settings(
        home=tmp_path_factory.mktemp("home"), prefix=PREFIX, user="ana", env=env, previews=False
    )


mesh = mesh_fixture(client="test-geonodes-gemini")


def geonodes(*steps: dict[str, Any], done: bool = True) -> Any:
    response = {"version": "1.0", "steps": list(steps), "done": done, "final_message": "ok"}
    return answer(
        json.dumps({"request_id": "x", "operations": [], "geonodes_json": json.dumps(response)})
    )


def subdivide(level: int) -> dict[str, Any]:
    return {
        "id": "step_1",
        "type": "NODE_TREE",
        "payload": {
            "target": {
                "object_name": "Box",
                "modifier_name": "GeometryNodes",
                "node_group_name": "GN_Smooth",
            },
            "operations": [
                {
                    "op": "create_node",
                    "node_id": "n1",
                    "bl_idname": "GeometryNodeSubdivisionSurface",
                },
                {"op": "set_input_default", "node_id": "n1", "socket": "Level", "value": level},
                {
                    "op": "link",
                    "from": {"node_id": "group_input", "socket": "Geometry"},
                    "to": {"node_id": "n1", "socket": "Mesh"},
                },
                {
                    "op": "link",
                    "from": {"node_id": "n1", "socket": "Mesh"},
                    "to": {"node_id": "group_output", "socket": "Geometry"},
                },
            ],
        },
    }


def set_level(level: int) -> dict[str, Any]:
    return {
        "id": "step_2",
        "type": "GN_OPS",
        "payload": {
            "v": 1,
            "target": {"object_name": "Box", "modifier_name": "GeometryNodes"},
            "ops": [{"op": "set_input", "node_id": "n1", "socket_name": "Level", "value": level}],
        },
    }


async def test_gemini_response_when_not_done_runs_then_asks_again_until_done(
    mesh: tuple[Mesh, Bus], fake: FakeGemini
) -> None:
    setup = build_request(
        user="ana", scene_id="smooth", prompt="add a cube named Box", planner="rules"
    )
    assert (await MeshClient(mesh[1]).run(setup, timeout=120)).status == "completed"
    fake.script(geonodes(subdivide(1), done=False), geonodes(set_level(2)))
    request = build_request(
        user="ana",
        scene_id="smooth",
        prompt="smooth the Box with subdivision nodes",
        planner="gemini",
    )
    result = await MeshClient(mesh[1]).run(request, timeout=120)
    assert result.status == "completed", (result.failure, result.message)
    assert result.gates is not None and result.gates.success
    first, second = fake.requests
    schema = first.body["generationConfig"]["responseJsonSchema"]
    assert "geonodes_json" in schema["properties"]
    assert "GeometryNodeSubdivisionSurface" in first.system  # named by "subdivision"
    assert "You said done=false" in second.turns[-1] and "step_1" in second.turns[-1]
    events = await read_run(mesh[1].js, PREFIX, result.run_id)
    planned = [e for e in events if isinstance(e, Planned)]
    assert [(p.iteration, p.done) for p in planned] == [(1, False), (2, True)]
    assert planned[1].schedule == ["step_2.01"]
    assert [e.envelope.success for e in events if isinstance(e, GatesEvaluated)] == [True, True]


async def test_gemini_response_when_it_has_a_safe_python_step_runs_it_in_the_sandbox(
    mesh: tuple[Mesh, Bus], fake: FakeGemini
) -> None:
    setup = build_request(user="ana", scene_id="py", prompt="add a cube named Box", planner="rules")
    assert (await MeshClient(mesh[1]).run(setup, timeout=120)).status == "completed"
    code = "import bpy\nprint(bpy.data.objects['Box'].modifiers['GeometryNodes'].type)"
    python = {"id": "step_2", "type": "PYTHON", "payload": {"code": code}}
    fake.script(geonodes(subdivide(1), python))
    request = build_request(user="ana", scene_id="py", prompt="smooth the Box", planner="gemini")
    result = await MeshClient(mesh[1]).run(request, timeout=120)
    turns = [r.turns[-1][:600] for r in fake.requests]
    assert result.status == "completed", (result.failure, result.message, turns)
    last = result.receipts[-1]
    assert (last.operation_id, last.tool_name) == ("step_2.01", "python.safe")
    assert last.result is not None and last.result["output"] == "NODES\n"
    assert len(fake.requests) == 1  # nothing went back to the model
