"""Another user's personal scene, another project's scene, project and run answer exactly
like ids nobody has, at the HTTP API, the MCP door and the bus door, on a real mesh (real
nats-server, real bpy): a caller cannot tell "not yours" from "not there" by status, body
or error type, whatever it asks to read, run, download, diff, lock or take a library of
(docs/studio.md, "Projects and roles")."""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from mcp.client.streamable_http import streamable_http_client
from nats.aio.client import Client

from contracts import subjects
from contracts.door import run_prefix
from services.doors.cli import main as cli
from services.doors.cli.mesh import Mesh
from services.doors.gateway.app import GatewayServer, create_app
from services.doors.gateway.auth import Tokens
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.bus_logins import user_login
from tests.support.checked_session import CheckedSession
from tests.support.mcp_plans import create
from tests.support.meshes import mesh_fixture
from tests.support.signing import register

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

PREFIX = "bmalike"
PEOPLE = ("ben", "zed")  # ben asks; zed owns what ben must not find
TOKENS = {f"tok-{name}": name for name in PEOPLE}
UNKNOWN = "nf_nobody"  # a scene id nobody has
ZEDS_OWN = "nf_zedown"  # zed's personal scene, filed nowhere
ZEDS_SHOT = "nf_zedshot"  # a scene of zed's project zedshow
ZEDS_PROJECT = "zedshow"


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(home=tmp_path_factory.mktemp("home"), prefix=PREFIX, user="ben", previews=False)


mesh = mesh_fixture(client="test-alike")


def as_(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer tok-{name}"}


def same_but_the_id(answer: str, the_id: str) -> str:
    """``answer`` with ``the_id`` written ``<id>``, so two answers compare apart from it."""
    return re.sub(re.escape(the_id), "<id>", answer)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def api(mesh: tuple[Mesh, Bus]) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(mesh[0].settings, mesh[1], Tokens(TOKENS), run_timeout=120)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
        yield client


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(api: httpx.AsyncClient) -> dict[str, str]:
    """zed's personal scene, zed's project with a scene of its own, ben's own project and
    scene; the ids ben asks about, each beside the id nobody has that it is compared to."""
    runs = {}
    for who, scene in (("zed", ZEDS_OWN), ("zed", ZEDS_SHOT), ("ben", "nf_ben")):
        body = {"prompt": "add a cube named Box", "sceneId": scene}
        made = await api.post("/api/agent/run", json=body, headers=as_(who))
        assert made.status_code == 200 and made.json()["status"] == "completed", made.text
        runs[scene] = made.json()["runId"]
    for who, project in (("zed", ZEDS_PROJECT), ("ben", "benshow")):
        made = await api.post("/api/projects", json={"projectId": project}, headers=as_(who))
        assert made.status_code == 201, made.text
    filed = await api.put(f"/api/projects/{ZEDS_PROJECT}/scenes/{ZEDS_SHOT}", headers=as_("zed"))
    assert filed.status_code == 200, filed.text
    zeds_run = runs[ZEDS_OWN]
    return {"run": zeds_run, "unknown_run": zeds_run[:-4] + "0000"}


SCENE_ASKS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("GET", "/api/scenes/{s}", {}),
    ("GET", "/api/scenes/{s}.blend", {}),
    ("GET", "/api/scenes/{s}/history", {}),
    ("GET", "/api/scenes/{s}/changes", {}),
    ("GET", "/api/scenes/{s}/changes?base=1&revision=1", {}),
    ("GET", "/api/scenes/{s}/preview.png", {}),
    ("GET", "/api/scenes/{s}/revisions/1/preview.png", {}),
    ("GET", "/api/scenes/{s}/revisions/1/scene.glb", {}),
    ("GET", "/api/scenes/{s}/objects/Box", {}),
    ("GET", "/api/scenes/{s}/view.png", {}),
    ("GET", "/api/scenes/{s}/cameras/Camera/view.png", {}),
    ("GET", "/api/scenes/{s}/tags", {}),
    ("GET", "/api/scenes/{s}/export/glb", {}),
    ("GET", "/api/scenes/{s}/lock", {}),
    ("GET", "/api/scenes/{s}/lock/history", {}),
    ("GET", "/api/scenes/{s}/libraries/characters@1.blend", {}),
    ("POST", "/api/scenes/{s}/revert", {"json": {"revision": 1}}),
    ("PUT", "/api/scenes/{s}/tags/keep", {"json": {"revision": 1}}),
    ("POST", "/api/scenes/{s}/revisions/1/review", {"json": {"verdict": "approve"}}),
    ("POST", "/api/scenes/{s}/lock", {"json": {}}),
    ("DELETE", "/api/scenes/{s}/lock", {}),
    ("POST", "/api/scenes/{s}/lock/break", {"json": {}}),
    ("POST", "/api/scenes/{s}/renders", {"json": {}}),
    ("PUT", "/api/projects/benshow/scenes/{s}", {}),
)
# A run or an import naming a scene id nobody has makes the caller's first revision of
# it, so these are compared with the read of an unknown scene instead: not found alike.
SCENE_WRITES: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("POST", "/api/scenes/{s}/import", {"content": b"BLENDER-v500" + bytes(64)}),
    ("POST", "/api/agent/run", {"json": {"prompt": "add a cube named In", "sceneId": "{s}"}}),
)


def _filled(value: Any, the_id: str) -> Any:
    if isinstance(value, str):
        return value.replace("{s}", the_id)
    if isinstance(value, dict):
        return {k: _filled(v, the_id) for k, v in value.items()}
    return value


async def _http(api: httpx.AsyncClient, method: str, path: str, the_id: str, **kw: Any) -> str:
    asked = await api.request(
        method, path.replace("{s}", the_id), headers=as_("ben"), **_filled(kw, the_id)
    )
    return f"{asked.status_code} {same_but_the_id(asked.text, the_id)}"


@pytest.mark.parametrize(("method", "path", "kw"), SCENE_ASKS, ids=lambda v: str(v)[:40])
async def test_http_when_naming_anothers_scene_answers_as_for_an_unknown_one(
    api: httpx.AsyncClient, world: dict[str, str], method: str, path: str, kw: dict[str, Any]
) -> None:
    unknown = await _http(api, method, path, UNKNOWN, **kw)
    assert unknown.startswith(("404", "422")), unknown  # never a 200 for what is not there
    for others in (ZEDS_OWN, ZEDS_SHOT):
        assert await _http(api, method, path, others, **kw) == unknown, (others, path)


@pytest.mark.parametrize(("method", "path", "kw"), SCENE_WRITES, ids=lambda v: str(v)[:40])
async def test_http_when_writing_anothers_scene_answers_as_a_read_of_an_unknown_one(
    api: httpx.AsyncClient, world: dict[str, str], method: str, path: str, kw: dict[str, Any]
) -> None:
    unknown = await _http(api, "GET", "/api/scenes/{s}", UNKNOWN)
    assert unknown.startswith("404"), unknown
    for others in (ZEDS_OWN, ZEDS_SHOT):
        assert await _http(api, method, path, others, **kw) == unknown, (others, path)
    assert await _http(api, "GET", "/api/scenes/{s}", UNKNOWN) == unknown  # nothing was made


@pytest.mark.parametrize(
    ("method", "path", "kw"),
    (
        ("GET", "/api/runs/{s}", {}),
        ("GET", "/api/runs/{s}/audit", {}),
        ("GET", "/api/runs/{s}/operations", {}),
        ("POST", "/api/runs/{s}/cancel", {"json": {}}),
        ("POST", "/api/runs/{s}/rerun", {"json": {"fromOp": 1}}),
        ("POST", "/api/runs/{s}/fork", {"json": {}}),
    ),
    ids=lambda v: str(v)[:40],
)
async def test_http_when_naming_anothers_run_answers_as_for_an_unknown_one(
    api: httpx.AsyncClient, world: dict[str, str], method: str, path: str, kw: dict[str, Any]
) -> None:
    unknown = await _http(api, method, path, world["unknown_run"], **kw)
    assert unknown.startswith("404"), unknown
    assert await _http(api, method, path, world["run"], **kw) == unknown


async def test_http_when_naming_anothers_project_answers_as_for_an_unknown_one(
    api: httpx.AsyncClient, world: dict[str, str]
) -> None:
    for method, path, kw in (
        ("GET", "/api/projects/{s}", {}),
        ("PUT", "/api/projects/{s}/members/ben", {"json": {"role": "lead"}}),
        ("DELETE", "/api/projects/{s}/members/zed", {}),
        ("PUT", "/api/projects/{s}/scenes/nf_ben", {}),
    ):
        unknown = await _http(api, method, path, "nopeshow", **kw)
        assert unknown.startswith("404"), unknown
        assert await _http(api, method, path, ZEDS_PROJECT, **kw) == unknown, path


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def mcp_url(mesh: tuple[Mesh, Bus]) -> AsyncIterator[str]:
    app = create_app(mesh[0].settings, mesh[1], Tokens(TOKENS), run_timeout=120)
    server = GatewayServer(app, port=0)
    url = await server.start()
    try:
        yield f"{url}/mcp"
    finally:
        await server.stop()


MCP_ASKS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("scene", {"scene_id": "{s}"}),
    ("scene_history", {"scene_id": "{s}"}),
    ("scene_changes", {"scene_id": "{s}"}),
    ("preview", {"scene_id": "{s}"}),
    ("inspect_object", {"scene_id": "{s}", "name": "Box"}),
    ("render_view", {"scene_id": "{s}"}),
    ("export_scene", {"scene_id": "{s}", "format": "glb"}),
    ("render", {"scene_id": "{s}"}),
)


def _mcp_answer(answer: Any, the_id: str) -> str:
    shown = {"isError": answer.isError, "content": [c.model_dump() for c in answer.content]}
    shown["structured"] = answer.structuredContent
    return same_but_the_id(json.dumps(shown, sort_keys=True), the_id)


async def test_mcp_when_naming_anothers_scene_or_run_answers_as_for_an_unknown_one(
    mcp_url: str, world: dict[str, str]
) -> None:
    async with (
        httpx.AsyncClient(headers=as_("ben"), timeout=httpx.Timeout(30, read=300)) as http,
        streamable_http_client(mcp_url, http_client=http) as (read, write, _),
        CheckedSession(read, write) as session,
    ):
        await session.initialize()

        async def ask(tool: str, args: dict[str, Any], the_id: str) -> str:
            filled = {
                k: create("In") if v == "{plan}" else _filled(v, the_id) for k, v in args.items()
            }
            if "plan" in filled:
                filled["plan"]["request_id"] = "alike-plan"  # the same words each time
            return _mcp_answer(await session.call_tool(tool, filled), the_id)

        for tool, args in MCP_ASKS:
            unknown = await ask(tool, args, UNKNOWN)
            assert '"isError": true' in unknown, (tool, unknown)
            for others in (ZEDS_OWN, ZEDS_SHOT):
                assert await ask(tool, args, others) == unknown, (tool, others)
        # A run on an id nobody has makes it; on another's, it answers as the read above.
        unknown = await ask("scene", {"scene_id": "{s}"}, UNKNOWN)
        for others in (ZEDS_OWN, ZEDS_SHOT):
            ran = await ask("run", {"scene_id": "{s}", "plan": "{plan}"}, others)
            assert ran == unknown, others
        for tool, more in (
            ("run_status", {}), ("audit", {}), ("audit", {"offset": 3}), ("cancel_run", {}),
            ("rerun_run", {"from_op": 1}), ("fork_run", {}),
        ):  # fmt: skip
            args = {"run_id": "{s}", **more}
            unknown = await ask(tool, args, world["unknown_run"])
            assert '"isError": true' in unknown, (tool, unknown)
            assert await ask(tool, args, world["run"]) == unknown, tool


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def bus_ben(
    mesh: tuple[Mesh, Bus], mesh_settings: Settings, world: dict[str, str]
) -> AsyncIterator[Client]:
    nc = await user_login(mesh[0].url, register(mesh_settings.home, "ben"), "ben")
    try:
        yield nc
    finally:
        await nc.close()


def _submit(scene: str) -> dict[str, Any]:
    return {
        "type": "run.requested", "event_id": str(uuid.uuid4()), "at": time.time(),
        "run_id": f"{run_prefix('ben')}-{uuid.uuid4().hex[:16]}", "request_id": "alike-bus",
        "thread_id": f"thread-{uuid.uuid4().hex[:16]}", "user": "ben", "scene_id": scene,
        "plan": create("In") | {"request_id": "alike-bus"}, "planner": "plan",
    }  # fmt: skip


BUS_ASKS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("scenes.changes", {"scene_id": "{s}"}),
    ("scenes.review", {"scene_id": "{s}", "revision": 1, "verdict": "approve"}),
    ("locks.take", {"scene_id": "{s}"}),
    ("locks.release", {"scene_id": "{s}"}),
    ("locks.break", {"scene_id": "{s}"}),
    ("render.submit", {"scene_id": "{s}"}),
    ("projects.file", {"project_id": "benshow", "scene_id": "{s}"}),
)


async def test_bus_when_naming_anothers_scene_run_or_project_answers_as_for_an_unknown_one(
    bus_ben: Client, world: dict[str, str]
) -> None:
    async def ask(verb: str, body: dict[str, Any], the_id: str) -> str:
        data = json.dumps(_filled(body, the_id)).encode()
        reply = await bus_ben.request(subjects.door_api(PREFIX, "ben", verb), data, timeout=10)
        return same_but_the_id(reply.data.decode(), the_id)

    for verb, body in BUS_ASKS:
        unknown = await ask(verb, body, UNKNOWN)
        assert "NOT_FOUND" in unknown, (verb, unknown)
        for others in (ZEDS_OWN, ZEDS_SHOT):
            assert await ask(verb, body, others) == unknown, (verb, others)
    # A run on an id nobody has makes it; on another's, it answers as the reads above.
    for scene in (ZEDS_OWN, ZEDS_SHOT):
        answer = await ask("run.submit", _submit(scene), scene)
        assert answer == '{"ok":false,"error":{"code":"NOT_FOUND","message":"no scene <id>"}}'
    cancel = {
        "type": "run.cancel_requested", "event_id": "e-alike", "at": 1.0, "run_id": "{s}",
        "request_id": "alike", "thread_id": "thread-alike", "user": "ben", "cancelled_by": "ben",
    }  # fmt: skip
    for verb, body in (("run.events", {"run_id": "{s}"}), ("run.audit", {"run_id": "{s}"}),
                       ("run.events", {"run_id": "{s}", "offset": 1}),
                       ("run.audit", {"run_id": "{s}", "offset": 1}),
                       ("run.cancel", cancel)):  # fmt: skip
        unknown = await ask(verb, body, world["unknown_run"])
        assert "NOT_FOUND" in unknown, (verb, unknown)
        assert await ask(verb, body, world["run"]) == unknown, verb
    for verb, body in (
        ("projects.show", {"project_id": "{s}"}),
        ("projects.member", {"project_id": "{s}", "member": "ben", "role": "lead"}),
        ("projects.file", {"project_id": "{s}", "scene_id": "nf_ben"}),
    ):
        unknown = await ask(verb, body, "nopeshow")
        assert "NOT_FOUND" in unknown, (verb, unknown)
        assert await ask(verb, body, ZEDS_PROJECT) == unknown, verb


CLI_ASKS: tuple[tuple[str, ...], ...] = (
    ("scenes", "show", "{s}"),
    ("scenes", "history", "{s}"),
    ("scenes", "diff", "{s}"),
    ("scenes", "diff", "{s}", "1", "1", "--json"),
    ("scenes", "review", "{s}", "1", "approve"),
    ("scenes", "download", "{s}", "--to", "{to}"),
    ("scenes", "export", "{s}", "--format", "glb", "-o", "{to}.glb"),
    ("scenes", "tags", "{s}"),
    ("scenes", "tag", "{s}", "1", "keep"),
    ("scenes", "lock", "{s}"),
    ("scenes", "unlock", "{s}"),
    ("scenes", "lock", "{s}", "--break"),
    ("libraries", "update", "{s}", "characters", "1"),
    ("libraries", "publish", "{s}", "characters", "{to}.blend"),
    ("revert", "{s}", "1"),
    ("inspect", "{s}", "Box"),
    ("view", "{s}", "-o", "{to}.png"),
    ("guardians", "{s}"),
    ("render", "{s}", "--no-wait"),
    ("projects", "file", "benshow", "{s}"),
)


async def test_cli_when_naming_anothers_scene_answers_as_for_an_unknown_one(
    mesh: tuple[Mesh, Bus],
    world: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("NATS_URL", mesh[0].url)
    monkeypatch.setenv("BLENDMESH_PREFIX", PREFIX)
    monkeypatch.setenv("BLENDMESH_USER", "ben")
    home = str(mesh[0].settings.home)

    async def blendmesh(args: tuple[str, ...], the_id: str) -> str:
        to = str(tmp_path / f"out-{the_id}")
        filled = [a.replace("{s}", the_id).replace("{to}", to) for a in args]
        code = await asyncio.to_thread(cli.main, ["--home", home, *filled])
        said = capsys.readouterr()
        return same_but_the_id(f"{code}\n{said.out}\n{said.err}".replace(to, "<to>"), the_id)

    for args in CLI_ASKS:
        unknown = await blendmesh(args, UNKNOWN)
        assert not unknown.startswith("0"), (args, unknown)
        for others in (ZEDS_OWN, ZEDS_SHOT):
            assert await blendmesh(args, others) == unknown, (args, others)
        written = await asyncio.to_thread(lambda: list(tmp_path.iterdir()))
        assert not written, args  # nothing was written for either
    # A run on an id nobody has makes it; on another's, it answers as a read of an unknown.
    unknown = await blendmesh(("scenes", "show", "{s}"), UNKNOWN)
    plan = tmp_path / "plan.json"
    await asyncio.to_thread(plan.write_text, json.dumps(create("In")))
    for others in (ZEDS_OWN, ZEDS_SHOT):
        ran = await blendmesh(("run", "--scene", "{s}", "--plan", str(plan)), others)
        assert ran == unknown, others
    for run_args in (("runs", "show", "{s}"), ("audit", "{s}"), ("cancel", "{s}")):
        unknown = await blendmesh(run_args, world["unknown_run"])
        assert not unknown.startswith("0"), (run_args, unknown)
        assert await blendmesh(run_args, world["run"]) == unknown, run_args
    for project_args in (
        ("projects", "show", "{s}"),
        ("projects", "add-member", "{s}", "ben", "lead"),
    ):
        unknown = await blendmesh(project_args, "nopeshow")
        assert await blendmesh(project_args, ZEDS_PROJECT) == unknown, project_args
