"""A shot imported over HTTP with its libraries (real nats-server, real bpy): the client
stages each library with ``POST /api/uploads`` and names it on the import; a library
nobody staged, another user's, or one named like a path is refused before anything runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from contracts.libraries import publish_plan
from services.bridge.blendfiles.references import library_paths
from services.doors.cli.mesh import Mesh
from services.doors.core import shot_files
from services.doors.core.scene_client import SceneDoor
from services.doors.gateway.app import create_app
from services.doors.gateway.auth import Tokens
from services.executor.client import SceneFiles
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.meshes import mesh_fixture
from tests.support.shot_files import HERO_X, make_shot, opened

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(300),
]

TOKENS = {"tok-ana": "ana", "tok-ben": "ben"}
ANA = {"Authorization": "Bearer tok-ana"}
BEN = {"Authorization": "Bearer tok-ben"}
BLEND = {"Content-Type": "application/octet-stream"}


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(
        home=tmp_path_factory.mktemp("home"), prefix="bmglibs", user="ana", previews=False
    )


mesh = mesh_fixture(client="test-gateway-libraries")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def api(mesh: tuple[Mesh, Bus]) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(mesh[0].settings, mesh[1], Tokens(TOKENS), run_timeout=120)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
        yield client


async def staged(api: httpx.AsyncClient, path: Path, who: dict[str, str] = ANA) -> str:
    data = await asyncio.to_thread(path.read_bytes)
    answer = await api.post("/api/uploads", content=data, headers={**who, **BLEND})
    assert answer.status_code in (200, 201), answer.text
    blob: str = answer.json()["blob"]
    return blob


async def shot_of(tmp_path: Path) -> tuple[bytes, dict[str, Path]]:
    gathered = await asyncio.to_thread(shot_files.gather, await make_shot(tmp_path))
    try:
        return await asyncio.to_thread(gathered.file.read_bytes), gathered.libraries
    finally:
        gathered.close()


async def imported(
    api: httpx.AsyncClient, scene: str, data: bytes, libraries: list[str], who: dict[str, str]
) -> httpx.Response:
    params: list[tuple[str, Any]] = [("library", value) for value in libraries]
    return await api.post(
        f"/api/scenes/{scene}/import", content=data, params=params, headers={**who, **BLEND}
    )


async def test_import_when_libraries_are_staged_and_named_keeps_the_shot_linked(
    api: httpx.AsyncClient, mesh: tuple[Mesh, Bus], tmp_path: Path
) -> None:
    data, libraries = await shot_of(tmp_path)
    named = [f"{name}={await staged(api, path)}" for name, path in sorted(libraries.items())]
    answer = await imported(api, "httpshot", data, named, ANA)
    assert answer.status_code == 200, answer.text  # a new scene: nothing to approve
    assert answer.json()["run"]["status"] == "completed", answer.text
    files = SceneFiles(mesh[1].js, mesh[1].prefix)
    head = await files.head("httpshot")
    assert head is not None
    stored = tmp_path / "stored.blend"
    await asyncio.to_thread(stored.write_bytes, await files.blend(head))
    links = sorted(library_paths(str(stored)))
    assert [p.split("@")[0] for p in links] == ["//libraries/characters", "//libraries/props"]
    written = await SceneDoor(mesh[1], mesh[0].settings).download(
        "httpshot", "ana", tmp_path / "down"
    )
    found = await opened(written[0])
    assert not any(missing for _, missing, _ in found["libraries"])
    assert next(o for o in found["objects"] if o[0] == "Hero" and o[2])[3] == HERO_X


async def test_import_when_a_library_is_another_users_upload_answers_422_naming_it(
    api: httpx.AsyncClient, mesh: tuple[Mesh, Bus], tmp_path: Path
) -> None:
    data, libraries = await shot_of(tmp_path)
    named = [f"{name}={await staged(api, path)}" for name, path in sorted(libraries.items())]
    answer = await imported(api, "benshot", data, named, BEN)  # Ana staged them, not Ben
    assert answer.status_code == 422, answer.text
    assert "no staged upload" in answer.text and "of yours" in answer.text
    assert await SceneFiles(mesh[1].js, mesh[1].prefix).head("benshot") is None


@pytest.mark.parametrize(
    "value",
    ["../etc=sha256:" + "0" * 64, "props=/etc/passwd", "props", "Props=sha256:" + "0" * 64],
)
async def test_import_when_a_library_is_named_badly_answers_422_before_anything_runs(
    api: httpx.AsyncClient, mesh: tuple[Mesh, Bus], value: str
) -> None:
    answer = await imported(api, "badlib", b"BLENDER-v500", [value], ANA)
    assert answer.status_code == 422, answer.text
    assert "is not <name>=sha256" in answer.text
    assert await SceneFiles(mesh[1].js, mesh[1].prefix).head("badlib") is None


async def test_import_when_more_libraries_than_a_shot_may_answers_422(
    api: httpx.AsyncClient,
) -> None:
    many = [f"lib{n}=sha256:{n:064x}" for n in range(17)]
    answer = await imported(api, "manylibs", b"BLENDER-v500", many, ANA)
    assert answer.status_code == 422, answer.text
    assert "at most 16 libraries" in answer.text


async def test_library_route_when_scene_is_the_callers_sends_the_revision_its_links_name(
    api: httpx.AsyncClient, mesh: tuple[Mesh, Bus], tmp_path: Path
) -> None:
    data, libraries = await shot_of(tmp_path)
    named = [f"{name}={await staged(api, path)}" for name, path in sorted(libraries.items())]
    answer = await imported(api, "sentshot", data, named, ANA)
    assert answer.status_code == 200, answer.text
    files = SceneFiles(mesh[1].js, mesh[1].prefix)
    head = await files.head("sentshot")
    assert head is not None
    stored = tmp_path / "stored.blend"
    await asyncio.to_thread(stored.write_bytes, await files.blend(head))
    for link in sorted(library_paths(str(stored))):
        file = link.removeprefix("//libraries/")
        sent = await api.get(f"/api/scenes/sentshot/libraries/{file}", headers=ANA)
        assert sent.status_code == 200, sent.text
        name = file.split("@")[0]
        original = await asyncio.to_thread(libraries[name].read_bytes)
        assert sent.content == original
        # Another user's request answers as for a scene that is not there.
        other = await api.get(f"/api/scenes/sentshot/libraries/{file}", headers=BEN)
        assert other.status_code == 404, other.text
    missing = await api.get("/api/scenes/sentshot/libraries/props@9999.blend", headers=ANA)
    assert missing.status_code == 404 and "no revision 9999 of library props" in missing.text
    for bad in ("..%2Fprops@1.blend", "Props@1.blend", "props@0.blend", "props@1.blend.png"):
        refused = await api.get(f"/api/scenes/sentshot/libraries/{bad}", headers=ANA)
        assert refused.status_code in (404, 422), (bad, refused.text)
        assert refused.headers.get("content-type", "").startswith("application/json")


async def test_publish_over_http_when_a_plan_names_a_staged_library_links_its_next_revision(
    api: httpx.AsyncClient, mesh: tuple[Mesh, Bus], tmp_path: Path
) -> None:
    data, libraries = await shot_of(tmp_path / "first")
    named = [f"{name}={await staged(api, path)}" for name, path in sorted(libraries.items())]
    assert (await imported(api, "pubshot", data, named, ANA)).status_code == 200
    _, newer = await shot_of(tmp_path / "newer")  # the library saved again by its artist
    size = (await asyncio.to_thread(newer["characters"].stat)).st_size
    blob = await staged(api, newer["characters"])
    plan = publish_plan("req-http-publish", "characters", blob, size)
    body = {"plan": plan, "sceneId": "pubshot"}
    asked = await api.post("/api/agent/run", json=body, headers=ANA)
    assert asked.status_code == 200, asked.text
    assert asked.json()["status"] == "awaiting_confirmation", asked.text  # destructive
    theirs = await api.post("/api/agent/run", json=body, headers=BEN)
    assert theirs.status_code == 404 and "no scene pubshot" in theirs.text  # as unknown
    [approval] = [
        a
        for a in (await api.get("/api/agent/approvals/pending", headers=ANA)).json()["approvals"]
        if a["runId"] == asked.json()["runId"]
    ]
    answer = {
        "approvalId": approval["approvalId"],
        "decision": "approve_once",
        "requestHash": approval["requestHash"],
    }
    done = await api.post("/api/agent/approvals/resolve", json=answer, headers=ANA)
    assert done.status_code == 200 and done.json()["status"] == "completed", done.text
    files = SceneFiles(mesh[1].js, mesh[1].prefix)
    head = await files.head("pubshot")
    assert head is not None and head.revision == 2
    stored = tmp_path / "stored.blend"
    await asyncio.to_thread(stored.write_bytes, await files.blend(head))
    characters = next(p for p in library_paths(str(stored)) if "characters@" in p)
    sent = await api.get(f"/api/scenes/pubshot/libraries/{characters.split('/')[-1]}", headers=ANA)
    assert sent.status_code == 200, sent.text
    assert sent.content == await asyncio.to_thread(newer["characters"].read_bytes)
