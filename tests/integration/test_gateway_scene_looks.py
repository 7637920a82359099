"""The gateway's routes for an asset import, one object in depth and a view as a PNG, on a
real mesh (real nats-server, real bpy): each a run the audit records; hostile input
refused with the status and message that say what to fix; another user's scene a 404."""

from __future__ import annotations

import json
import struct
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio

from services.doors.cli.mesh import Mesh
from services.doors.gateway.app import create_app
from services.doors.gateway.auth import Tokens
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.asset_files import OBJ, STL, glb, gltf_document
from tests.support.meshes import mesh_fixture

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

TOKENS = {"tok-ana": "ana", "tok-ben": "ben"}
ANA = {"Authorization": "Bearer tok-ana"}
BEN = {"Authorization": "Bearer tok-ben"}
SMALL_UPLOADS = 4096


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    home = tmp_path_factory.mktemp("home")
    return Settings(
        home=home, prefix="bmglooks", user="ana", max_upload_bytes=SMALL_UPLOADS, previews=False
    )


mesh = mesh_fixture(client="test-gateway-looks")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def api(mesh: tuple[Mesh, Bus]) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(mesh[0].settings, mesh[1], Tokens(TOKENS), run_timeout=120)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
        yield client


async def upload(
    api: httpx.AsyncClient,
    scene: str,
    data: bytes,
    filename: str,
    collection: str = "Props",
    headers: dict[str, str] = ANA,
) -> httpx.Response:
    params = {"filename": filename, "collection": collection}
    sent = {**headers, "Content-Type": "application/octet-stream"}
    return await api.post(f"/api/scenes/{scene}/assets", params=params, content=data, headers=sent)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shelf(api: httpx.AsyncClient) -> dict[str, Any]:
    """Ana's scene `shelf`: a glTF triangle in Props, then an STL in Parts."""
    first = await upload(api, "shelf", glb(), "tri.glb")
    second = await upload(api, "shelf", STL, "bracket.stl", "Parts")
    assert first.status_code == 200, first.text
    assert second.status_code == 200, second.text
    answer: dict[str, Any] = second.json()
    return answer


async def test_assets_when_glb_and_stl_imported_complete_with_their_objects(
    shelf: dict[str, Any],
) -> None:
    run = shelf["run"]
    assert run["ok"] is True and run["status"] == "completed"
    [action] = run["actions"]
    assert action["tool"] == "scene.import_asset"
    assert shelf["approval"] is None  # a safe write: the default policy asks nobody


async def test_object_when_imported_answers_its_counts_and_collection(
    api: httpx.AsyncClient, shelf: dict[str, Any]
) -> None:
    tri = await api.get("/api/scenes/shelf/objects/Tri", headers=ANA)
    bracket = await api.get("/api/scenes/shelf/objects/Parts", headers=ANA)
    assert tri.status_code == 200, tri.text
    assert tri.json()["object"]["collections"] == ["Props"]
    assert tri.json()["object"]["mesh"]["triangles"] == 1
    # An STL's one object is named for its file, which the executor names for the collection.
    assert bracket.status_code == 200, bracket.text
    assert bracket.json()["object"]["collections"] == ["Parts"]
    assert tri.json()["run"]["actions"][0]["tool"] == "object.inspect"
    assert "worldBounds" in tri.json()["object"] and "customProperties" in tri.json()["object"]


async def test_object_when_missing_or_another_users_answers_404(
    api: httpx.AsyncClient, shelf: dict[str, Any]
) -> None:
    missing = await api.get("/api/scenes/shelf/objects/Nope", headers=ANA)
    theirs = await api.get("/api/scenes/shelf/objects/Tri", headers=BEN)
    assert missing.status_code == 404 and "'Nope' does not exist" in missing.text
    assert theirs.status_code == 404 and "Tri" not in theirs.text


async def test_view_when_asked_answers_a_png_of_that_size(
    api: httpx.AsyncClient, shelf: dict[str, Any]
) -> None:
    params = {"width": 200, "height": 120, "azimuth": 0, "elevation": 60}
    view = await api.get("/api/scenes/shelf/view.png", params=params, headers=ANA)
    assert view.status_code == 200, view.text
    assert view.headers["content-type"] == "image/png"
    assert view.content.startswith(b"\x89PNG\r\n\x1a\n")
    assert struct.unpack(">II", view.content[16:24]) == (200, 120)
    assert view.headers["x-blendmesh-run"].startswith("run-")


@pytest.mark.parametrize(
    ("path", "params", "status", "said"),
    [
        ("view.png", {"width": 32}, 422, "width"),
        ("view.png", {"height": 4096}, 422, "height"),
        ("view.png", {"elevation": 91}, 422, "elevation"),
        ("cameras/Cam/view.png", {}, 404, "no camera named 'Cam'"),
    ],
)
async def test_view_when_out_of_bounds_or_no_such_camera_is_refused(
    api: httpx.AsyncClient,
    shelf: dict[str, Any],
    path: str,
    params: dict[str, Any],
    status: int,
    said: str,
) -> None:
    view = await api.get(f"/api/scenes/shelf/{path}", params=params, headers=ANA)
    assert view.status_code == status, view.text
    assert said in view.text


@pytest.mark.parametrize(
    ("data", "filename", "collection", "status", "said"),
    [
        (glb(gltf_document(buffer_uri="/etc/passwd")), "x.glb", "Props", 422, "outside it"),
        (glb(gltf_document(image_uri="https://e.com/t.png")), "x.glb", "Props", 422, "t.png"),
        (OBJ, "x.glb", "Props", 422, "not a .glb"),
        (b"glTF" + b"\0" * 40, "x.glb", "Props", 422, "malformed .glb"),
        (glb(), "x.blend", "Props", 422, "filename"),
        (glb(), "x.glb", "../etc", 422, "collection"),
        (b"v 0 0 0\n" * 1000, "x.obj", "Props", 413, "BLENDMESH_MAX_UPLOAD_BYTES"),
    ],
)
async def test_assets_when_hostile_are_refused_saying_what_to_fix(
    api: httpx.AsyncClient,
    data: bytes,
    filename: str,
    collection: str,
    status: int,
    said: str,
) -> None:
    answer = await upload(api, "hostile", data, filename, collection)
    assert answer.status_code == status, answer.text
    assert said in json.dumps(answer.json())
    assert "/etc/passwd" not in answer.text


async def test_assets_when_another_users_scene_answers_404(
    api: httpx.AsyncClient, shelf: dict[str, Any]
) -> None:
    answer = await upload(api, "shelf", glb(), "tri.glb", headers=BEN)
    assert answer.status_code == 404
