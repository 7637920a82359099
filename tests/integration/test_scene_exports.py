"""A scene exported as a download on a real mesh (real nats-server, real bpy): built with
the text, curve, constraint, rig, render and HDRI tools through a plan, then fetched as
GLB, FBX, OBJ, USD and STL from the gateway, the MCP door and the CLI. The GLB opens again
in another Blender; no file holds a path of the mesh's host; another user's scene is a
404 and a format no exporter writes a 422."""

from __future__ import annotations

import asyncio
import base64
import json
import struct
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import mcp.types as types
import pytest
import pytest_asyncio
from mcp.client.streamable_http import streamable_http_client

from services.doors.cli import main as cli
from services.doors.cli.mesh import Mesh
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.bridges import script_result
from tests.support.checked_session import CheckedSession
from tests.support.gateways import gateway_fixture
from tests.support.mcp_plans import structured
from tests.support.meshes import mesh_fixture

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(300),
]

TOKENS = {"tok-ana": "ana", "tok-ben": "ben"}
ANA = {"Authorization": "Bearer tok-ana"}
BEN = {"Authorization": "Bearer tok-ben"}
SCENE = "sign"
MAGIC = {
    "glb": b"glTF",
    "fbx": b"Kaydara FBX Binary",
    "usd": b"PXR-USDC",
}


def op(n: int, tool: str, **args: Any) -> dict[str, Any]:
    return {
        "operation_id": f"op{n}",
        "tool_name": tool,
        "args": args,
        "depends_on": [f"op{n - 1}"] if n else [],
        "safety_level": "safe_write",
    }


SIGN_PLAN = {
    "request_id": "req-sign",
    "operations": [
        op(0, "object.create", primitive="cube", name="Post", location=[0, 0, -1]),
        op(1, "text.create", body="Hello", name="Sign", extrude=0.1, bevel_depth=0.01),
        op(2, "curve.create", kind="circle", name="Ring", radius=2, bevel_depth=0.05),
        op(3, "empty.create", name="Target", location=[0, 5, 0]),
        op(4, "constraint.track_to", object="Sign", target="Target"),
        op(5, "armature.create", name="Rig"),
        op(6, "render.set", engine="cycles", samples=64, resolution=[640, 360]),
        op(7, "world.hdri", hdri="forest", strength=1.5),
    ],
}


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    home = tmp_path_factory.mktemp("home")
    return Settings(home=home, prefix="bmexport", user="ana", previews=False)


mesh = mesh_fixture(client="test-scene-exports")


gateway = gateway_fixture(TOKENS)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def api(gateway: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=gateway, timeout=httpx.Timeout(30, read=300)) as client:
        yield client


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sign(api: httpx.AsyncClient) -> dict[str, Any]:
    """Ana's scene: a post, a text, a ring, an aimed constraint, a rig, Cycles and an HDRI."""
    answer = await api.post(
        "/api/agent/run", json={"plan": SIGN_PLAN, "sceneId": SCENE}, headers=ANA
    )
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    assert body["ok"] is True, body
    return body


async def download(
    api: httpx.AsyncClient, fmt: str, headers: dict[str, str] = ANA
) -> httpx.Response:
    return await api.get(f"/api/scenes/{SCENE}/export/{fmt}", headers=headers)


async def test_export_glb_when_downloaded_reopens_in_blender_with_its_meshes(
    api: httpx.AsyncClient, sign: dict[str, Any], tmp_path: Path
) -> None:
    got = await download(api, "glb")
    assert got.status_code == 200, got.text
    assert got.headers["content-type"] == "model/gltf-binary"
    assert got.headers["content-disposition"] == f'attachment; filename="{SCENE}.glb"'
    assert got.headers["x-blendmesh-run"].startswith("run-")
    assert got.content[:4] == b"glTF"
    path = tmp_path / "sign.glb"
    path.write_bytes(got.content)
    opened, _ = await script_result(
        "import bpy, json\n"
        "bpy.ops.wm.read_factory_settings(use_empty=True)\n"
        f"bpy.ops.import_scene.gltf(filepath={str(path)!r})\n"
        "meshes = {o.name: len(o.data.vertices) for o in bpy.data.objects if o.type == 'MESH'}\n"
        "print('RESULT ' + json.dumps(meshes))\n"
    )
    # The text and the ring are exported as the meshes Blender evaluates them to.
    assert {"Post", "Sign", "Ring"} <= set(opened), opened
    assert opened["Post"] >= 8 and opened["Sign"] > 100 and opened["Ring"] > 100


@pytest.mark.parametrize("fmt", ["fbx", "obj", "usd", "stl"])
async def test_export_when_each_format_asked_answers_that_file_without_host_paths(
    api: httpx.AsyncClient, sign: dict[str, Any], mesh: tuple[Mesh, Bus], fmt: str
) -> None:
    got = await download(api, fmt)
    assert got.status_code == 200, got.text
    data = got.content
    if fmt in MAGIC:
        assert data.startswith(MAGIC[fmt]), data[:32]
    elif fmt == "obj":
        assert b"\nv " in data and b"\nf " in data and b"mtllib" not in data
    else:  # binary STL: an 80-byte header, a triangle count, 50 bytes a triangle
        (triangles,) = struct.unpack("<I", data[80:84])
        assert triangles > 100 and len(data) == 84 + 50 * triangles
    home = str(mesh[0].settings.home).encode()
    assert home not in data and b"site-packages" not in data


async def test_export_when_another_users_scene_answers_404_naming_nothing_of_it(
    api: httpx.AsyncClient, sign: dict[str, Any]
) -> None:
    theirs = await download(api, "glb", BEN)
    assert theirs.status_code == 404, theirs.text
    assert "Sign" not in theirs.text and "Post" not in theirs.text


@pytest.mark.parametrize("fmt", ["blend", "GLB", "glb.exe", "x" * 5000])
async def test_export_when_format_is_not_one_answers_422_naming_the_formats(
    api: httpx.AsyncClient, sign: dict[str, Any], fmt: str
) -> None:
    got = await download(api, fmt)
    assert got.status_code == 422, got.text
    assert "glb" in got.text and "stl" in got.text


@pytest.mark.parametrize(
    "path", ["/api/scenes/..%2F..%2Fsign/export/glb", "/api/scenes/sign/export/..%2F..%2Fglb"]
)
async def test_export_when_a_path_traverses_answers_404_and_no_file(
    api: httpx.AsyncClient, sign: dict[str, Any], path: str
) -> None:
    got = await api.get(path, headers=ANA)
    assert got.status_code in (404, 422), got.text
    assert not got.content.startswith(b"glTF")


async def test_export_scene_tool_when_called_over_mcp_answers_the_file_as_a_resource(
    gateway: str, sign: dict[str, Any]
) -> None:
    async with (
        httpx.AsyncClient(headers=ANA, timeout=httpx.Timeout(30, read=300)) as http,
        streamable_http_client(f"{gateway}/mcp", http_client=http) as (read, write, _),
        CheckedSession(read, write) as session,
    ):
        await session.initialize()
        listed = await session.list_tools()
        made = await session.call_tool("export_scene", {"scene_id": SCENE, "format": "stl"})
        wrong = await session.call_tool("export_scene", {"scene_id": SCENE, "format": "dwg"})
    assert "export_scene" in {t.name for t in listed.tools}
    assert made.isError is False, made.content
    answer = structured(made)
    assert answer["format"] == "stl" and answer["file"].startswith("sha256:")
    [resource] = [c for c in made.content if isinstance(c, types.EmbeddedResource)]
    assert isinstance(resource.resource, types.BlobResourceContents)
    data = base64.b64decode(resource.resource.blob)
    assert len(data) == answer["bytes"] and resource.resource.mimeType == "model/stl"
    assert wrong.isError is True and "format" in str(wrong.content[0])


async def test_cli_scenes_export_when_run_writes_the_file_and_refuses_a_folder(
    mesh: tuple[Mesh, Bus],
    sign: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    running = mesh[0]
    monkeypatch.setenv("NATS_URL", running.url)
    monkeypatch.setenv("BLENDMESH_PREFIX", running.settings.prefix)
    monkeypatch.setenv("BLENDMESH_USER", "ana")
    home = ["--home", str(running.settings.home)]
    out = tmp_path / "sign.obj"
    args = [*home, "scenes", "export", SCENE, "--format", "obj", "-o", str(out), "--json"]
    assert await asyncio.to_thread(cli.main, args) == 0
    said = json.loads(capsys.readouterr().out)
    assert said["format"] == "obj" and said["bytes"] == out.stat().st_size
    assert out.read_bytes().startswith(b"# Blender")
    folder = [*home, "scenes", "export", SCENE, "--format", "glb", "-o", str(tmp_path)]
    assert await asyncio.to_thread(cli.main, folder) != 0
    assert "is a folder" in capsys.readouterr().err


async def test_request_when_typed_as_an_artist_plans_and_runs_every_new_tool(
    api: httpx.AsyncClient,
) -> None:
    """The offline planner reads the request, the policy allows it, the executor runs it
    on real Blender, and the export reads what the steps before it made."""
    prompt = (
        'add text "Open" named Word extruded by 0.1, add an empty named Aim at 0 5 0, '
        "make Word track Aim, render with cycles at 32 samples, use the studio hdri, "
        "export it as glb"
    )
    answer = await api.post(
        "/api/agent/run", json={"prompt": prompt, "sceneId": "typed"}, headers=ANA
    )
    assert answer.status_code == 200, answer.text
    run = answer.json()
    assert run["ok"] is True and run["status"] == "completed", run
    tools = [a["tool"] for a in run["actions"]]
    assert tools == [
        "text.create",
        "empty.create",
        "constraint.track_to",
        "render.set",
        "world.hdri",
        "scene.export",
    ]
    got = await api.get("/api/scenes/typed/export/glb", headers=ANA)
    assert got.status_code == 200 and got.content[:4] == b"glTF"


async def test_cli_scenes_export_when_the_scene_is_another_users_writes_nothing(
    mesh: tuple[Mesh, Bus],
    sign: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    running = mesh[0]
    monkeypatch.setenv("NATS_URL", running.url)
    monkeypatch.setenv("BLENDMESH_PREFIX", running.settings.prefix)
    monkeypatch.setenv("BLENDMESH_USER", "ben")
    out = tmp_path / "theirs.glb"
    args = ["--home", str(running.settings.home), "scenes", "export", SCENE, "--format", "glb"]
    assert await asyncio.to_thread(cli.main, [*args, "-o", str(out)]) != 0
    said = capsys.readouterr().err
    assert SCENE in said and "Sign" not in said
    assert not out.exists()
