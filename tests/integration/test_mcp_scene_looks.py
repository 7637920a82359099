"""The tools LLM hosts expect, through the gateway's ``/mcp`` with the official SDK's
client, on a real mesh and real Blender: an asset import, one object in depth, a view as
an image, the prompts, and a plan without a request_id. Each is a run: the audit trail
records it, and another user's token sees nothing of it."""

from __future__ import annotations

import base64
import struct
from typing import Any

import mcp.types as types
import pytest
import pytest_asyncio
from mcp.shared.exceptions import McpError

from services.runtime.service.settings import Settings
from tests.support.asset_files import OBJ, OBJ_WITH_LIBRARY, glb, gltf_document
from tests.support.gateways import gateway_fixture, mcp_door
from tests.support.mcp_plans import error_type, op, structured
from tests.support.meshes import mesh_fixture

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

TOKENS = {"tok-ana": "ana", "tok-ben": "ben"}
SMALL_UPLOADS = 8192


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    home = tmp_path_factory.mktemp("home")
    return Settings(
        home=home, prefix="bmlooks", user="local", max_upload_bytes=SMALL_UPLOADS, previews=False
    )


mesh = mesh_fixture(client="test-mcp-looks")


gateway = gateway_fixture(TOKENS, path="/mcp")


door = mcp_door


def asset(name: str, data: bytes, scene: str, collection: str = "Props") -> dict[str, Any]:
    encoded = base64.b64encode(data).decode()
    return {"scene_id": scene, "filename": name, "data": encoded, "collection": collection}


def png_size(image: types.ImageContent) -> tuple[int, int]:
    data = base64.b64decode(image.data)
    assert data.startswith(b"\x89PNG\r\n\x1a\n"), data[:8]
    width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk comes first
    return width, height


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def imported(gateway: str) -> dict[str, Any]:
    """Ana's scene `looks` with a glTF triangle in Props and an OBJ quad in Walls."""
    async with door(gateway, "tok-ana") as session:
        first = await session.call_tool("import_asset", asset("tri.glb", glb(), "looks"))
        second = await session.call_tool("import_asset", asset("quad.obj", OBJ, "looks", "Walls"))
    assert not first.isError, first.content
    assert not second.isError, second.content
    return structured(first)


async def test_import_asset_when_glb_adds_its_objects_in_a_new_revision(
    imported: dict[str, Any],
) -> None:
    assert imported["status"] == "completed"
    [receipt] = imported["receipts"]
    assert receipt["tool_name"] == "scene.import_asset"
    assert receipt["result"]["collection"] == "Props"
    assert receipt["result"]["objects"] == ["Tri"]
    assert receipt["blender_mutation_id"]  # a write, with a revision behind it
    assert imported["scene"]["revision"] >= 1


async def test_inspect_object_when_imported_answers_counts_bounds_and_collection(
    gateway: str, imported: dict[str, Any]
) -> None:
    async with door(gateway, "tok-ana") as session:
        answer = await session.call_tool("inspect_object", {"scene_id": "looks", "name": "Quad"})
        history = await session.call_tool("scene_history", {"scene_id": "looks"})
        trail = await session.call_tool("audit", {"run_id": structured(answer)["run_id"]})
    detail = structured(answer)
    assert not answer.isError, answer.content
    assert detail["collections"] == ["Walls"]
    assert detail["mesh"]["vertices"] == 4 and detail["mesh"]["faces"] == 1
    assert detail["mesh"]["triangles"] == 2
    low, high = detail["world_bounds"]
    assert [round(v, 3) for v in high] != [round(v, 3) for v in low]
    # A read: the audit records it and the scene has no revision more.
    records = structured(trail)["audit_records"]
    [read] = [r for r in records if r["tool_name"] == "object.inspect"]
    assert read["status"] == "succeeded" and read["blender_mutation_id"] is None
    assert len(structured(history)["revisions"]) == 2  # the two imports, no more


async def test_inspect_object_when_no_such_object_answers_a_tool_error(
    gateway: str, imported: dict[str, Any]
) -> None:
    async with door(gateway, "tok-ana") as session:
        answer = await session.call_tool("inspect_object", {"scene_id": "looks", "name": "Nope"})
    assert error_type(answer) == "ToolExecutionError"
    assert "'Nope' does not exist" in structured(answer)["error"]["message"]


async def test_render_view_when_angle_given_answers_a_png_of_that_size(
    gateway: str, imported: dict[str, Any]
) -> None:
    args = {"scene_id": "looks", "width": 160, "height": 96, "azimuth": 90, "elevation": 20}
    async with door(gateway, "tok-ana") as session:
        answer = await session.call_tool("render_view", args)
    assert not answer.isError, answer.content
    [image] = [c for c in answer.content if isinstance(c, types.ImageContent)]
    assert image.mimeType == "image/png"
    assert png_size(image) == (160, 96)
    assert structured(answer)["image"].startswith("sha256:")
    assert structured(answer)["shading"] == "material"  # colours and textures by default


async def test_render_view_when_camera_missing_or_with_an_angle_is_refused(
    gateway: str, imported: dict[str, Any]
) -> None:
    async with door(gateway, "tok-ana") as session:
        missing = await session.call_tool("render_view", {"scene_id": "looks", "camera": "Cam"})
        both = await session.call_tool(
            "render_view", {"scene_id": "looks", "camera": "Cam", "azimuth": 10}
        )
        huge = await session.call_tool("render_view", {"scene_id": "looks", "width": 4096})
        slow = await session.call_tool(
            "render_view", {"scene_id": "looks", "width": 2048, "shading": "rendered"}
        )
        odd = await session.call_tool("render_view", {"scene_id": "looks", "shading": "eevee"})
    assert error_type(missing) == "ToolExecutionError"
    assert "no camera named 'Cam'" in structured(missing)["error"]["message"]
    assert error_type(both) == "ValidationError"
    assert "not both" in structured(both)["error"]["message"]
    assert error_type(huge) == "ValidationError"
    assert error_type(slow) == "ValidationError"
    assert "at most 1024 pixels" in structured(slow)["error"]["message"]
    assert error_type(odd) == "ValidationError"


async def test_looks_when_another_users_scene_answer_not_found(
    gateway: str, imported: dict[str, Any]
) -> None:
    async with door(gateway, "tok-ben") as session:
        inspected = await session.call_tool("inspect_object", {"scene_id": "looks", "name": "Quad"})
        viewed = await session.call_tool("render_view", {"scene_id": "looks"})
        imported_too = await session.call_tool("import_asset", asset("tri.glb", glb(), "looks"))
    assert error_type(inspected) == "NotFound"
    assert error_type(viewed) == "NotFound"
    assert error_type(imported_too) == "NotFound"


async def test_prompts_when_listed_and_got_fill_in_their_arguments(gateway: str) -> None:
    async with door(gateway, "tok-ana") as session:
        listed = await session.list_prompts()
        room = await session.get_prompt("block_out_room", {"scene_id": "loft", "size": "5 x 4 m"})
        shot = await session.get_prompt(
            "light_product_shot", {"scene_id": "studio", "object": "Bottle"}
        )
        with pytest.raises(McpError) as missing:
            await session.get_prompt("light_product_shot", {"scene_id": "studio"})
        with pytest.raises(McpError) as bad_id:
            await session.get_prompt("block_out_room", {"scene_id": "../etc"})
    assert {p.name for p in listed.prompts} == {"block_out_room", "light_product_shot"}
    room_text = room.messages[0].content
    shot_text = shot.messages[0].content
    assert isinstance(room_text, types.TextContent) and isinstance(shot_text, types.TextContent)
    assert "`loft`" in room_text.text and "5 x 4 m" in room_text.text
    assert "`Bottle`" in shot_text.text and "render_view" in shot_text.text
    assert "missing argument: object" in missing.value.error.message
    assert "scene_id" in bad_id.value.error.message


async def test_run_when_plan_has_no_request_id_completes(gateway: str) -> None:
    plan = {"operations": [op("a", "object.create", {"primitive": "cube", "name": "Box"})]}
    async with door(gateway, "tok-ana") as session:
        listed = await session.list_tools()
        answer = await session.call_tool("run", {"scene_id": "no-request-id", "plan": plan})
    assert not answer.isError, answer.content
    assert structured(answer)["status"] == "completed"
    assert structured(answer)["request_id"].startswith("req-")
    names = {t.name for t in listed.tools}
    assert {"inspect_object", "render_view", "import_asset"} <= names


@pytest.mark.parametrize(
    ("filename", "data", "collection", "said"),
    [
        ("x.glb", glb(gltf_document(buffer_uri="/etc/passwd")), "Props", "outside it"),
        ("x.glb", glb(gltf_document(image_uri="https://e.com/a/t.png")), "Props", "'t.png'"),
        ("x.obj", OBJ_WITH_LIBRARY, "Props", "material library"),
        ("x.glb", b"glTF" + b"\0" * 40, "Props", "malformed .glb"),
        ("x.glb", OBJ, "Props", "not a .glb"),
        ("x.blend", glb(), "Props", "does not end in a format"),
        ("x.glb", glb(), "../../etc", "collection"),
        ("x.obj", b"v 0 0 0\n" * 2000, "Props", "BLENDMESH_MAX_UPLOAD_BYTES"),
    ],
)
async def test_import_asset_when_hostile_answers_a_validation_error_saying_what_to_fix(
    gateway: str, filename: str, data: bytes, collection: str, said: str
) -> None:
    async with door(gateway, "tok-ana") as session:
        answer = await session.call_tool(
            "import_asset", asset(filename, data, "hostile", collection)
        )
    assert error_type(answer) == "ValidationError", answer.content
    message = structured(answer)["error"]["message"]
    assert said in message and "/etc/" not in message and "e.com" not in message
