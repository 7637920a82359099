"""The gateway's scene routes on a real mesh (real nats-server, real bpy): list, summary,
history, import of a real .blend, revert, ownership, upload limits, and the run route's
guard for an exported file a person changed."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from contracts import inspection
from contracts.scene_files import blob_id
from services.doors.cli.mesh import Mesh
from services.doors.core.scene_client import exported
from services.doors.gateway.app import create_app
from services.doors.gateway.auth import Tokens
from services.executor.client import ObjectStoreUploads, SceneFiles
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.integration.test_scene_files import blend_with_cone
from tests.support.meshes import mesh_fixture

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

TOKENS = {"tok-ana": "ana", "tok-ben": "ben"}
ANA = {"Authorization": "Bearer tok-ana"}
BEN = {"Authorization": "Bearer tok-ben"}
BLEND = {**ANA, "Content-Type": "application/octet-stream"}
SMALL_UPLOADS = 4096


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(
        home=tmp_path_factory.mktemp("home"), prefix="bmgscenes", user="ana", previews=False
    )


mesh = mesh_fixture(client="test-gateway-scenes")


async def client_of(settings: Settings, bus: Bus) -> httpx.AsyncClient:
    app = create_app(settings, bus, Tokens(TOKENS), run_timeout=120)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gateway")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def api(mesh: tuple[Mesh, Bus]) -> AsyncIterator[httpx.AsyncClient]:
    async with await client_of(mesh[0].settings, mesh[1]) as client:
        yield client


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def small_api(mesh: tuple[Mesh, Bus]) -> AsyncIterator[httpx.AsyncClient]:
    """The gateway with an upload limit of SMALL_UPLOADS bytes."""
    settings = mesh[0].settings.with_(max_upload_bytes=SMALL_UPLOADS)
    async with await client_of(settings, mesh[1]) as client:
        yield client


async def run(api: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    response = await api.post("/api/agent/run", json=body, headers=ANA)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


async def added(api: httpx.AsyncClient, scene: str, name: str, where: str = "0 0 1") -> str:
    answer = await run(api, {"prompt": f"add a cube named {name} at {where}", "sceneId": scene})
    assert answer["status"] == "completed", answer
    return str(answer["runId"])


async def approve(api: httpx.AsyncClient, asked: dict[str, Any], decision: str) -> Any:
    approval = asked["approval"]
    body = {
        "approvalId": approval["approvalId"],
        "decision": decision,
        "requestHash": approval["requestHash"],
    }
    response = await api.post("/api/agent/approvals/resolve", json=body, headers=ANA)
    assert response.status_code == 200, response.text
    return response.json()


def waiting(response: httpx.Response, tool: str) -> dict[str, Any]:
    """A scene run's 202: the run waits for the approval of ``tool``."""
    assert response.status_code == 202, response.text
    answer: dict[str, Any] = response.json()
    assert answer["run"]["status"] == "awaiting_confirmation"
    assert [op["tool"] for op in answer["approval"]["operations"]] == [tool]
    assert answer["approval"]["runId"] == answer["run"]["runId"]
    return answer


async def object_names(api: httpx.AsyncClient, scene: str) -> set[str]:
    response = await api.get(f"/api/scenes/{scene}", headers=ANA)
    assert response.status_code == 200, response.text
    return {o["name"] for o in response.json()["objects"]}


def error(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    return str(response.json()["error"]["message"])


async def nothing_staged(mesh: tuple[Mesh, Bus], scene: str, data: bytes) -> None:
    uploads = ObjectStoreUploads(mesh[1].js, mesh[1].prefix)
    assert await uploads.get("ana", blob_id(data)) is None
    assert await SceneFiles(mesh[1].js, mesh[1].prefix).head(scene) is None


# -- reads ------------------------------------------------------------------------------


async def test_scene_reads_when_owner_asks_list_summary_and_history(
    api: httpx.AsyncClient,
) -> None:
    first = await added(api, "gs_read", "Box")
    second = await added(api, "gs_read", "Crate", "3 0 1")

    listed = await api.get("/api/scenes", headers=ANA)
    assert listed.status_code == 200, listed.text
    row = next(r for r in listed.json()["scenes"] if r["sceneId"] == "gs_read")
    assert row["revision"] == 2 and row["objects"] == 2
    assert row["changedBy"] == "ana" and row["runId"] == second and row["changedAt"]

    summary = (await api.get("/api/scenes/gs_read", headers=ANA)).json()
    assert summary["revision"] == 2 and summary["objectCount"] == 2
    assert {o["name"] for o in summary["objects"]} == {"Box", "Crate"}
    crate = next(o for o in summary["objects"] if o["name"] == "Crate")
    assert crate["type"] == "MESH" and crate["location"] == [3.0, 0.0, 1.0]
    assert summary["lastRun"] == second and summary["lastUser"] == "ana"
    assert summary["text"][0].startswith("scene gs_read at revision 2")
    assert any(line.strip().startswith("Crate [MESH]") for line in summary["text"])

    history = (await api.get("/api/scenes/gs_read/history", headers=ANA)).json()
    assert history["sceneId"] == "gs_read"
    assert [(r["revision"], r["runId"]) for r in history["revisions"]] == [(1, first), (2, second)]
    assert history["revisions"][0]["tools"] == ["object.create"]
    newest = (await api.get("/api/scenes/gs_read/history?limit=1", headers=ANA)).json()
    assert [r["revision"] for r in newest["revisions"]] == [2]


async def test_scene_reads_when_scene_unknown_or_limit_out_of_range_answer_404_and_422(
    api: httpx.AsyncClient,
) -> None:
    for path in ("/api/scenes/gs_none", "/api/scenes/gs_none/history"):
        assert "no scene gs_none" in error(await api.get(path, headers=ANA), 404)
    for path in ("/api/scenes?limit=0", "/api/scenes?limit=201", "/api/scenes/x/history?limit=101"):
        assert "limit" in error(await api.get(path, headers=ANA), 422)
    response = await api.get("/api/scenes")
    assert response.status_code == 401


async def test_scene_reads_when_a_query_parameter_is_unknown_answer_422_naming_it(
    api: httpx.AsyncClient,
) -> None:
    message = error(await api.get("/api/scenes?limt=5", headers=ANA), 422)
    assert "unknown query parameter 'limt'; GET /api/scenes takes: limit" in message
    hostile = "&".join(f"{'x' * 200}{i}=1" for i in range(10))
    message = error(await api.get(f"/api/scenes/gs_none/history?{hostile}", headers=ANA), 422)
    assert "and 7 more" in message and "x" * 41 not in message
    message = error(await api.get("/api/scenes/gs_none?limit=1", headers=ANA), 422)
    assert "GET /api/scenes/{sceneId} takes: none" in message
    assert (await api.get("/api/scenes?limit=5", headers=ANA)).status_code == 200


# -- import -----------------------------------------------------------------------------


async def test_import_when_real_blend_approved_makes_it_the_scenes_revision(
    api: httpx.AsyncClient, tmp_path: Path
) -> None:
    await added(api, "gs_import", "Box")  # replacing a scene is destructive: a person decides
    data = (await blend_with_cone(None, tmp_path / "cone.blend")).read_bytes()
    asked = waiting(
        await api.post("/api/scenes/gs_import/import", content=data, headers=BLEND),
        "scene.import",
    )
    assert asked["approval"]["operations"][0]["args"] == {"blob": blob_id(data), "bytes": len(data)}
    done = await approve(api, asked, "approve_once")
    assert done["status"] == "completed", done
    assert done["scenePath"] == "/api/scenes/gs_import.blend"
    assert "Cone" in await object_names(api, "gs_import")
    history = (await api.get("/api/scenes/gs_import/history", headers=ANA)).json()
    assert [(r["revision"], r["tools"]) for r in history["revisions"]] == [
        (1, ["object.create"]),
        (2, ["scene.import"]),
    ]
    assert history["revisions"][1]["approvedBy"] == "ana"
    # Listed, the import says what it was, though it was asked without words.
    listed = (await api.get("/api/runs", headers=ANA)).json()["runs"]
    [run] = [r for r in listed if r["runId"] == done["runId"]]
    assert run["prompt"] is None, run
    assert re.fullmatch(r"import a \.blend \(\d+(\.\d)? [KM]B\)", run["request"]), run
    assert "gs_import" in {
        r["sceneId"] for r in (await api.get("/api/scenes", headers=ANA)).json()["scenes"]
    }


async def test_import_when_body_is_over_the_json_limit_streams_past_it(
    api: httpx.AsyncClient, mesh: tuple[Mesh, Bus]
) -> None:
    # Past the 1 MiB a JSON body may hold, within the upload limit: the exemption.
    data = b"BLENDER-v405RENDH" + b"\0" * (mesh[0].settings.max_body_bytes + 4096)
    await added(api, "gs_large", "Box")  # so the import waits for a person, who rejects it
    asked = waiting(
        await api.post("/api/scenes/gs_large/import", content=data, headers=BLEND),
        "scene.import",
    )
    rejected = await approve(api, asked, "reject")
    assert rejected["status"] == "failed"
    head = await SceneFiles(mesh[1].js, mesh[1].prefix).head("gs_large")
    assert head is not None and head.revision == 1


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"hello, this is not blender", "not a .blend file"),
        (b"", "is empty"),
        (b"\x28\xb5\x2f\xfdnot zstd at all", "not a .blend file"),
    ],
)
async def test_import_when_not_a_blend_answers_422_and_stages_nothing(
    api: httpx.AsyncClient, mesh: tuple[Mesh, Bus], body: bytes, message: str
) -> None:
    response = await api.post("/api/scenes/gs_text/import", content=body, headers=BLEND)
    assert message in error(response, 422)
    assert "File > Save" in response.text
    await nothing_staged(mesh, "gs_text", body)


async def test_import_when_over_upload_limit_answers_413_by_length_or_while_streaming(
    small_api: httpx.AsyncClient, mesh: tuple[Mesh, Bus]
) -> None:
    data = b"BLENDER" + b"x" * (SMALL_UPLOADS * 4)
    declared = await small_api.post("/api/scenes/gs_big/import", content=data, headers=BLEND)
    assert "BLENDMESH_MAX_UPLOAD_BYTES" in error(declared, 413)
    assert f"{SMALL_UPLOADS} bytes" in declared.text

    async def chunked() -> AsyncIterator[bytes]:  # no Content-Length: counted as it comes
        for start in range(0, len(data), 1000):
            yield data[start : start + 1000]

    streamed = await small_api.post("/api/scenes/gs_big/import", content=chunked(), headers=BLEND)
    assert "BLENDMESH_MAX_UPLOAD_BYTES" in error(streamed, 413)
    await nothing_staged(mesh, "gs_big", data)
    # The exemption is the import route's alone: other bodies keep the JSON limit.
    big_json = {"prompt": "x" * 100, "plan": {"pad": "x" * (2 * 1024 * 1024)}}
    response = await small_api.post("/api/agent/run", json=big_json, headers=ANA)
    assert "BLENDMESH_MAX_BODY_BYTES" in error(response, 413)


async def test_import_when_no_token_answers_401_and_stages_nothing(
    api: httpx.AsyncClient, mesh: tuple[Mesh, Bus]
) -> None:
    data = b"BLENDER-v405" + b"\0" * 64
    response = await api.post(
        "/api/scenes/gs_anon/import",
        content=data,
        headers={"Content-Type": "application/octet-stream"},
    )
    assert response.status_code == 401
    await nothing_staged(mesh, "gs_anon", data)


# -- revert -----------------------------------------------------------------------------


async def test_revert_when_approved_makes_head_hash_equal_the_revisions(
    api: httpx.AsyncClient, mesh: tuple[Mesh, Bus]
) -> None:
    await added(api, "gs_rev", "Box")
    await added(api, "gs_rev", "Crate", "3 0 1")
    files = SceneFiles(mesh[1].js, mesh[1].prefix)
    one = await files.revision_inspection("gs_rev", 1)
    assert one is not None

    response = await api.post("/api/scenes/gs_rev/revert", json={"revision": 1}, headers=ANA)
    asked = waiting(response, "scene.revert")
    assert asked["approval"]["operations"][0]["args"] == {"revision": 1}
    done = await approve(api, asked, "approve_once")
    assert done["status"] == "completed", done

    head = await files.head("gs_rev")
    assert head is not None and head.revision == 3
    assert head.scene_hash == inspection.decode(one[1]).scene_hash
    assert await object_names(api, "gs_rev") == {"Box"}
    history = (await api.get("/api/scenes/gs_rev/history", headers=ANA)).json()
    assert history["revisions"][-1]["runId"] == done["runId"]
    listed = (await api.get("/api/runs", headers=ANA)).json()["runs"]
    [run] = [r for r in listed if r["runId"] == done["runId"]]
    assert run["request"] == "revert to revision 1", run
    assert history["revisions"][-1]["tools"] == ["scene.revert"]


async def test_revert_when_revision_unknown_or_invalid_answers_422_and_runs_nothing(
    api: httpx.AsyncClient, mesh: tuple[Mesh, Bus]
) -> None:
    await added(api, "gs_norev", "Box")
    missing = await api.post("/api/scenes/gs_norev/revert", json={"revision": 9}, headers=ANA)
    message = error(missing, 422)
    assert "no revision 9" in message and "GET /api/scenes/gs_norev/history" in message
    for body in ({"revision": 0}, {"revision": "one"}, {}, {"revision": 1, "extra": 1}):
        response = await api.post("/api/scenes/gs_norev/revert", json=body, headers=ANA)
        assert response.status_code == 422, (body, response.text)
    head = await SceneFiles(mesh[1].js, mesh[1].prefix).head("gs_norev")
    assert head is not None and head.revision == 1


# -- ownership --------------------------------------------------------------------------


async def test_scene_routes_when_scene_is_another_users_answer_404_everywhere(
    api: httpx.AsyncClient, mesh: tuple[Mesh, Bus]
) -> None:
    await added(api, "gs_anas", "Box")
    blend = {**BEN, "Content-Type": "application/octet-stream"}
    answers = [
        await api.get("/api/scenes/gs_anas", headers=BEN),
        await api.get("/api/scenes/gs_anas/history", headers=BEN),
        await api.get("/api/scenes/gs_anas.blend", headers=BEN),
        await api.get("/api/scenes/gs_anas/preview.png", headers=BEN),
        await api.post(
            "/api/scenes/gs_anas/import", content=b"BLENDER" + b"\0" * 64, headers=blend
        ),
        await api.post("/api/scenes/gs_anas/revert", json={"revision": 1}, headers=BEN),
    ]
    for response in answers:
        assert response.status_code == 404, (response.url, response.text)
        assert response.json()["error"] == {"type": "NotFound", "message": "no scene gs_anas"}
    listed = (await api.get("/api/scenes", headers=BEN)).json()["scenes"]
    assert "gs_anas" not in {row["sceneId"] for row in listed}
    head = await SceneFiles(mesh[1].js, mesh[1].prefix).head("gs_anas")
    assert head is not None and head.revision == 1


# -- the run route and a hand-edited export ---------------------------------------------


async def hand_edited(api: httpx.AsyncClient, settings: Settings, scene: str) -> Path:
    await added(api, scene, "Box")
    path = exported(settings).path(scene)
    await blend_with_cone(path, path, "HandCone")  # the artist saves over the export
    return path


async def test_run_when_export_was_edited_by_hand_answers_409_naming_file_and_choices(
    api: httpx.AsyncClient, mesh: tuple[Mesh, Bus]
) -> None:
    path = await hand_edited(api, mesh[0].settings, "gs_edited")
    edited = path.read_bytes()
    body = {"prompt": "add a uv sphere named Ball at 3 0 1", "sceneId": "gs_edited"}
    for route in ("/api/agent/run", "/api/agent/run/stream"):
        response = await api.post(route, json=body, headers=ANA)
        message = error(response, 409)
        assert response.json()["error"]["type"] == "Conflict"
        assert "gs_edited.blend" in message
        assert '"exportedFile": "adopt"' in message and '"exportedFile": "discard"' in message
    assert path.read_bytes() == edited
    head = await SceneFiles(mesh[1].js, mesh[1].prefix).head("gs_edited")
    assert head is not None and head.revision == 1  # nothing ran
    bad = await api.post("/api/agent/run", json={**body, "exportedFile": "keep"}, headers=ANA)
    assert "exportedFile" in error(bad, 422)


async def test_run_when_adopt_imports_the_file_first_then_builds_on_it(
    api: httpx.AsyncClient, mesh: tuple[Mesh, Bus]
) -> None:
    await hand_edited(api, mesh[0].settings, "gs_adopt")
    body = {"prompt": "add a uv sphere named Ball at 3 0 1", "sceneId": "gs_adopt"}
    imported = await run(api, {**body, "exportedFile": "adopt"})
    assert imported["status"] == "awaiting_confirmation", imported
    assert [a["tool"] for a in imported["actions"]] == ["scene.import"]
    pending = (await api.get("/api/agent/approvals/pending", headers=ANA)).json()["approvals"]
    approval = next(a for a in pending if a["runId"] == imported["runId"])
    done = await approve(api, {"approval": approval}, "approve_once")
    assert done["status"] == "completed", done

    after = await run(api, body)  # the file is blendmesh's again: no choice needed
    assert after["status"] == "completed", after
    assert {"Box", "HandCone", "Ball"} <= await object_names(api, "gs_adopt")


async def test_run_when_discard_keeps_a_copy_and_replaces_the_file(
    api: httpx.AsyncClient, mesh: tuple[Mesh, Bus]
) -> None:
    path = await hand_edited(api, mesh[0].settings, "gs_discard")
    edited = path.read_bytes()
    body = {
        "prompt": "add a uv sphere named Ball at 3 0 1",
        "sceneId": "gs_discard",
        "exportedFile": "discard",
    }
    after = await run(api, body)
    assert after["status"] == "completed", after
    backups = list(path.parent.glob("gs_discard.blend.bak-*"))
    assert len(backups) == 1 and backups[0].read_bytes() == edited
    assert path.read_bytes() != edited
    assert "HandCone" not in await object_names(api, "gs_discard")


async def test_run_when_another_user_names_a_scene_with_an_edited_export_leaves_it(
    api: httpx.AsyncClient, mesh: tuple[Mesh, Bus]
) -> None:
    path = await hand_edited(api, mesh[0].settings, "gs_notbens")
    edited = path.read_bytes()
    body = {
        "prompt": "add a cube named Intruder",
        "sceneId": "gs_notbens",
        "exportedFile": "discard",
    }
    response = await api.post("/api/agent/run", json=body, headers=BEN)
    # Answered as an unknown scene is, before anything is planned or set aside.
    assert error(response, 404) == "no scene gs_notbens"
    assert path.read_bytes() == edited
    assert not list(path.parent.glob("gs_notbens.blend.bak-*"))


async def test_run_when_adopted_file_is_over_the_upload_limit_answers_413_and_keeps_it(
    api: httpx.AsyncClient, small_api: httpx.AsyncClient, mesh: tuple[Mesh, Bus]
) -> None:
    path = await hand_edited(api, mesh[0].settings, "gs_bigexport")
    edited = path.read_bytes()
    assert len(edited) > SMALL_UPLOADS
    body = {"prompt": "add a cube named More", "sceneId": "gs_bigexport", "exportedFile": "adopt"}
    response = await small_api.post("/api/agent/run", json=body, headers=ANA)
    message = error(response, 413)
    assert "gs_bigexport.blend" in message and "BLENDMESH_MAX_UPLOAD_BYTES" in message
    assert path.read_bytes() == edited
    assert await ObjectStoreUploads(mesh[1].js, mesh[1].prefix).get("ana", blob_id(edited)) is None
    head = await SceneFiles(mesh[1].js, mesh[1].prefix).head("gs_bigexport")
    assert head is not None and head.revision == 1
