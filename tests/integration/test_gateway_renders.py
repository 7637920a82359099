"""Render jobs over HTTP on a real mesh (docs/renders.md): the owner renders frames of
their scene with Workbench and Cycles, reads the job, downloads a frame and cancels a job;
another user's scene or job is 404 on every route, and what a hostile caller sends first
(frames 1-999999999, negative or reversed, 100000x100000, 0 or huge samples, an unknown
engine, a cost over the user's budget) is refused naming the limit."""

from __future__ import annotations

import asyncio
import base64
import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import mcp.types as types
import pytest
import pytest_asyncio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from services.doors.cli.mesh import Mesh
from services.doors.gateway.app import GatewayServer, create_app
from services.doors.gateway.auth import Tokens
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.integration.test_gateway_scenes import ANA, BEN, TOKENS, added, client_of
from tests.support.checked_session import CheckedSession
from tests.support.mcp_plans import error_type, structured
from tests.support.meshes import mesh_fixture

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(300),
]
BUDGET = 32 * 32 * 4 * 50  # 50 frames of 32x32 at 4 samples
AT_ONCE = BUDGET + 512  # one job at the budget, and not one more frame of 32x32


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(
        home=tmp_path_factory.mktemp("home"),
        prefix="bmgrenders",
        user="ana",
        previews=False,
        env={
            "BLENDMESH_USER_RENDER_COST": str(BUDGET),
            "BLENDMESH_USER_RENDER_COST_AT_ONCE": str(AT_ONCE),
        },
    )


mesh = mesh_fixture(client="test-gateway-renders")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def api(mesh: tuple[Mesh, Bus]) -> AsyncIterator[httpx.AsyncClient]:
    async with await client_of(mesh[0].settings, mesh[1]) as client:
        await added(client, "shot", "Box")
        yield client


async def ended(api: httpx.AsyncClient, job_id: str) -> dict[str, Any]:
    for _ in range(1200):
        answer = await api.get(f"/api/renders/{job_id}", headers=ANA)
        assert answer.status_code == 200, answer.text
        job: dict[str, Any] = answer.json()
        if job["status"] in ("completed", "cancelled", "failed"):
            return job
        await asyncio.sleep(0.1)
    raise AssertionError(f"job {job_id} did not end")


@pytest.mark.parametrize("engine", ["workbench", "cycles"])
async def test_render_when_owner_asks_stores_each_frame_and_hands_it_out(
    api: httpx.AsyncClient, engine: str
) -> None:
    body = {"frames": "1-3", "engine": engine, "samples": 1, "size": "32x32"}
    asked = await api.post("/api/scenes/shot/renders", json=body, headers=ANA)
    assert asked.status_code == 202, asked.text
    assert asked.json()["cost"] == 3 * 32 * 32
    job = await ended(api, asked.json()["jobId"])
    assert job["status"] == "completed", job
    assert [f["frame"] for f in job["frames"]] == [1, 2, 3]
    png = await api.get(f"/api/renders/{job['jobId']}/frames/2", headers=ANA)
    assert png.status_code == 200 and png.headers["content-type"] == "image/png"
    assert png.content[:8] == b"\x89PNG\r\n\x1a\n"
    assert hashlib.sha256(png.content).hexdigest() == job["frames"][1]["sha256"]
    missing = await api.get(f"/api/renders/{job['jobId']}/frames/9", headers=ANA)
    assert missing.status_code == 404 and "no frame 9" in missing.text


async def test_render_when_another_users_scene_or_job_is_404_everywhere(
    api: httpx.AsyncClient,
) -> None:
    body = {"frames": "1-2", "engine": "workbench", "samples": 1, "size": "32x32"}
    theirs = await api.post("/api/scenes/shot/renders", json=body, headers=BEN)
    assert theirs.status_code == 404 and "no scene shot" in theirs.text
    asked = await api.post("/api/scenes/shot/renders", json=body, headers=ANA)
    job_id = asked.json()["jobId"]
    for method, path in [
        ("GET", f"/api/renders/{job_id}"),
        ("POST", f"/api/renders/{job_id}/cancel"),
        ("GET", f"/api/renders/{job_id}/frames/1"),
    ]:
        answer = await api.request(method, path, headers=BEN)
        assert answer.status_code == 404, (path, answer.text)
        assert f"no render job {job_id}" in answer.text
    await ended(api, job_id)
    late = await api.post(f"/api/renders/{job_id}/cancel", headers=ANA)
    assert late.status_code == 409 and "completed already" in late.text


@pytest.mark.parametrize(
    ("change", "status", "said"),
    [
        ({"frames": "1-999999999"}, 422, "past Blender's last frame"),
        ({"frames": "-5-3"}, 422, "0 or more"),
        ({"frames": "-4"}, 422, "0 or more"),
        ({"frames": "30-1"}, 422, "backwards"),
        ({"size": "100000x100000"}, 422, "width 100000"),
        ({"size": "../../etc"}, 422, "WIDTHxHEIGHT"),
        ({"samples": 0}, 422, "samples 0"),
        ({"samples": 10**12}, 422, "samples"),
        ({"engine": "octane"}, 422, "engine 'octane' is unknown"),
        ({"frames": "1-51", "samples": 4}, 403, "BLENDMESH_USER_RENDER_COST"),
        ({"revision": 99}, 422, "not 99"),
        ({"frames": "1" * 5000}, 422, "frames"),
    ],
)
async def test_render_when_hostile_input_is_refused_naming_the_limit(
    api: httpx.AsyncClient, change: dict[str, object], status: int, said: str
) -> None:
    body = {"frames": "1-2", "engine": "workbench", "samples": 1, "size": "32x32", **change}
    answer = await api.post("/api/scenes/shot/renders", json=body, headers=ANA)
    assert answer.status_code == status, answer.text
    assert said in answer.text


@pytest.mark.parametrize("job_id", ["..", "a.b", "x" * 200, "render-*"])
async def test_render_job_when_id_is_not_a_token_is_refused(
    api: httpx.AsyncClient, job_id: str
) -> None:
    answer = await api.get(f"/api/renders/{job_id}", headers=ANA)
    assert answer.status_code in (404, 422), answer.text


async def test_render_when_cancelled_ends_cancelled(api: httpx.AsyncClient) -> None:
    body = {"frames": "1-40", "engine": "workbench", "samples": 1, "size": "32x32"}
    asked = await api.post("/api/scenes/shot/renders", json=body, headers=ANA)
    job_id = asked.json()["jobId"]
    cancelled = await api.post(f"/api/renders/{job_id}/cancel", headers=ANA)
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    job = await ended(api, job_id)
    assert job["status"] == "cancelled" and len(job["frames"]) < 40


async def test_render_when_jobs_under_way_would_pass_the_budget_is_403_until_one_ends(
    api: httpx.AsyncClient,
) -> None:
    big = {"engine": "cycles", "samples": 4, "size": "32x32", "frames": "1-50"}
    first = await api.post("/api/scenes/shot/renders", json=big, headers=ANA)
    assert first.status_code == 202, first.text
    job_id = first.json()["jobId"]
    for _ in range(600):  # a frame stored: an executor has counted the job (it queued it)
        if (await api.get(f"/api/renders/{job_id}", headers=ANA)).json()["frames"]:
            break
        await asyncio.sleep(0.05)
    small = {"engine": "workbench", "samples": 1, "size": "32x32", "frames": "1"}
    second = await api.post("/api/scenes/shot/renders", json=small, headers=ANA)
    assert second.status_code == 403, second.text
    assert "BLENDMESH_USER_RENDER_COST_AT_ONCE" in second.text
    assert f"under way cost {BUDGET:,}" in second.text
    await api.post(f"/api/renders/{job_id}/cancel", headers=ANA)
    await ended(api, job_id)
    again = await api.post("/api/scenes/shot/renders", json=small, headers=ANA)
    assert again.status_code == 202, again.text
    assert (await ended(api, again.json()["jobId"]))["status"] == "completed"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def mcp_url(mesh: tuple[Mesh, Bus], api: httpx.AsyncClient) -> AsyncIterator[str]:
    app = create_app(mesh[0].settings, mesh[1], Tokens(TOKENS), run_timeout=120)
    server = GatewayServer(app, port=0)
    url = await server.start()
    try:
        yield f"{url}/mcp"
    finally:
        await server.stop()


@asynccontextmanager
async def mcp_door(url: str, token: str) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30, read=120)) as http,
        streamable_http_client(url, http_client=http) as (read, write, _),
        CheckedSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def test_mcp_render_when_owner_asks_reads_the_job_and_its_frames(mcp_url: str) -> None:
    async with mcp_door(mcp_url, "tok-ana") as ana, mcp_door(mcp_url, "tok-ben") as ben:
        asked = await ana.call_tool(
            "render",
            {"scene_id": "shot", "frames": "1-2", "engine": "workbench", "samples": 1,
             "size": "32x32"},
        )  # fmt: skip
        assert not asked.isError, asked
        job_id = structured(asked)["job_id"]
        for _ in range(600):
            job = structured(await ana.call_tool("render_job", {"job_id": job_id}))
            if job["status"] == "completed":
                break
            await asyncio.sleep(0.1)
        assert job["status"] == "completed" and len(job["frames"]) == 2, job
        frame = await ana.call_tool("render_frame", {"job_id": job_id, "frame": 2})
        image = [c for c in frame.content if isinstance(c, types.ImageContent)]
        assert len(image) == 1
        data = base64.b64decode(image[0].data)
        assert hashlib.sha256(data).hexdigest() == job["frames"][1]["sha256"]
        for name, args in [
            ("render_job", {"job_id": job_id}),
            ("cancel_render", {"job_id": job_id}),
            ("render_frame", {"job_id": job_id, "frame": 1}),
            ("render", {"scene_id": "shot", "frames": "1-2"}),
        ]:
            refused = await ben.call_tool(name, args)
            assert refused.isError and error_type(refused) == "NotFound", (name, refused)
        for change, said in [
            ({"frames": "1-999999999"}, "past Blender's last frame"),
            ({"frames": "-2"}, "0 or more"),
            ({"frames": "9-1"}, "backwards"),
            ({"size": "100000x100000"}, "width 100000"),
            ({"samples": 0}, "samples"),
            ({"samples": 10**9}, "samples"),
            ({"engine": "octane"}, "engine"),
            ({"scene_id": "../../etc"}, "scene_id"),
        ]:
            refused = await ana.call_tool("render", {"scene_id": "shot", **change})
            assert refused.isError and error_type(refused) == "ValidationError", change
            assert said in structured(refused)["error"]["message"], (change, refused)
