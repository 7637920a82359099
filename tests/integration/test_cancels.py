"""Cancelling runs on a real mesh (real nats-server, real bpy), through the HTTP API and
the CLI: while a run waits for approval, mid-execution, and after its end. A cancelled
run fails RUN_CANCELLED naming who cancelled; the scene stays at a committed revision."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio

from contracts.events import CancelRequested, Executed, OperationStarted
from services.doors.cli import main as cli
from services.doors.cli.mesh import Mesh
from services.doors.core.client import MeshClient
from services.doors.core.requests import build_request
from services.doors.gateway.app import create_app
from services.doors.gateway.auth import Tokens
from services.runtime.nats.history import read_run
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.mcp_plans import op
from tests.support.meshes import mesh_fixture

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

PREFIX = "bmcancel"
ANA = {"Authorization": "Bearer tok-ana"}
BEN = {"Authorization": "Bearer tok-ben"}


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    home = tmp_path_factory.mktemp("home")
    return Settings(home=home, prefix=PREFIX, user="ana", previews=False)


mesh = mesh_fixture(client="test-cancels")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def api(mesh: tuple[Mesh, Bus]) -> AsyncIterator[httpx.AsyncClient]:
    tokens = Tokens({"tok-ana": "ana", "tok-ben": "ben"})
    app = create_app(mesh[0].settings, mesh[1], tokens, run_timeout=120)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
        yield client


async def run(api: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    response = await api.post("/api/agent/run", json=body, headers=ANA)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


async def waiting_delete(api: httpx.AsyncClient, scene: str, name: str) -> dict[str, Any]:
    assert (await run(api, {"prompt": f"add a cube named {name}", "sceneId": scene}))["ok"]
    answer = await run(api, {"prompt": f"delete {name}", "sceneId": scene})
    assert answer["status"] == "awaiting_confirmation", answer
    return answer


async def revision(api: httpx.AsyncClient, scene: str) -> int:
    response = await api.get(f"/api/scenes/{scene}", headers=ANA)
    assert response.status_code == 200, response.text
    return int(response.json()["revision"])


async def test_cancel_when_the_run_waits_for_approval_fails_it_naming_who(
    api: httpx.AsyncClient, mesh: tuple[Mesh, Bus]
) -> None:
    asked = await waiting_delete(api, "c_wait", "Kept")
    before = await revision(api, "c_wait")
    response = await api.post(
        f"/api/runs/{asked['runId']}/cancel", json={"reason": "wrong cube"}, headers=ANA
    )
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["status"] == "failed" and answer["failure"]["errorCode"] == "RUN_CANCELLED"
    assert answer["failure"]["type"] == "Conflict"
    assert answer["summary"] == "ana cancelled the run: wrong cube"
    events = await read_run(mesh[1].js, PREFIX, asked["runId"])
    assert not [e for e in events if isinstance(e, Executed)]
    (cancel,) = [e for e in events if isinstance(e, CancelRequested)]
    assert (cancel.cancelled_by, cancel.reason) == ("ana", "wrong cube")
    assert await revision(api, "c_wait") == before
    replayed = await api.post(f"/api/runs/{asked['runId']}/cancel", headers=ANA)
    assert replayed.status_code == 409
    assert "(cancelled by ana): nothing to cancel" in replayed.json()["error"]["message"]
    pending = (await api.get("/api/agent/approvals/pending", headers=ANA)).json()["approvals"]
    assert asked["runId"] not in [p["runId"] for p in pending]


async def test_cancel_when_heard_mid_execution_rolls_the_run_back_and_runs_nothing_after(
    api: httpx.AsyncClient, mesh: tuple[Mesh, Bus]
) -> None:
    assert (await run(api, {"prompt": "add a cube named Base", "sceneId": "c_mid"}))["ok"]
    before = await revision(api, "c_mid")
    ops = [
        op(f"op{i:03d}", "object.create", {"primitive": "cube", "name": f"C{i}"})
        for i in range(300)
    ]
    request = build_request(
        user="ana", scene_id="c_mid", plan={"request_id": "c-mid-1", "operations": ops}
    )
    running = asyncio.ensure_future(MeshClient(mesh[1]).run(request, timeout=120))
    for _ in range(1200):  # until the executor has begun
        assert not running.done(), running.result().message
        events = await read_run(mesh[1].js, PREFIX, request.run_id)
        if any(isinstance(e, OperationStarted) for e in events):
            break
        await asyncio.sleep(0.05)
    response = await api.post(f"/api/runs/{request.run_id}/cancel", headers=ANA)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["failure"]["errorCode"] == "RUN_CANCELLED", answer["summary"]
    assert "completed" not in [a["status"] for a in answer["actions"]]  # nothing was kept
    (executed,) = [
        e for e in await read_run(mesh[1].js, PREFIX, request.run_id) if isinstance(e, Executed)
    ]
    statuses = [r.status for r in executed.receipts]
    assert statuses[0] == "rolled_back" and statuses[-1] == "skipped", statuses
    assert set(statuses) == {"rolled_back", "skipped"}  # the op in hand finished, then undone
    assert (await running).status == "failed"  # the run's own caller hears the same end
    assert await revision(api, "c_mid") == before


async def test_cancel_when_refused_says_why_and_logs_nothing(
    api: httpx.AsyncClient, mesh: tuple[Mesh, Bus]
) -> None:
    done = await run(api, {"prompt": "add a cube named Over", "sceneId": "c_over"})
    ended = await api.post(f"/api/runs/{done['runId']}/cancel", headers=ANA)
    assert ended.status_code == 409
    assert "completed already: nothing to cancel" in ended.json()["error"]["message"]
    asked = await waiting_delete(api, "c_other", "Hers")
    answers = {
        "another user's": await api.post(f"/api/runs/{asked['runId']}/cancel", headers=BEN),
        "unknown": await api.post("/api/runs/no-such-run/cancel", headers=ANA),
        "no token": await api.post(f"/api/runs/{asked['runId']}/cancel"),
        "long reason": await api.post(
            f"/api/runs/{asked['runId']}/cancel", json={"reason": "x" * 501}, headers=ANA
        ),
        "bad id": await api.post("/api/runs/a.b/cancel", headers=ANA),
        "reason a number": await api.post(
            f"/api/runs/{asked['runId']}/cancel", json={"reason": 10**400}, headers=ANA
        ),
        "reason nested": await api.post(
            f"/api/runs/{asked['runId']}/cancel", json={"reason": {"a": [[["x"]]]}}, headers=ANA
        ),
        "body a list": await api.post(f"/api/runs/{asked['runId']}/cancel", json=[1], headers=ANA),
        "not json": await api.post(
            f"/api/runs/{asked['runId']}/cancel",
            content=b"{",
            headers={**ANA, "Content-Type": "application/json"},
        ),
        "unknown field": await api.post(
            f"/api/runs/{asked['runId']}/cancel", json={"why": "x"}, headers=ANA
        ),
    }
    statuses = {name: r.status_code for name, r in answers.items()}
    assert statuses == {
        "another user's": 404,
        "unknown": 404,
        "no token": 401,
        "long reason": 422,
        "bad id": 422,
        "reason a number": 422,
        "reason nested": 422,
        "body a list": 422,
        "not json": 400,
        "unknown field": 422,
    }
    assert answers["another user's"].json() == answers["unknown"].json() | {
        "error": {**answers["unknown"].json()["error"], "message": f"no run {asked['runId']}"}
    }
    for kinds in [
        await read_run(mesh[1].js, PREFIX, done["runId"]),
        await read_run(mesh[1].js, PREFIX, asked["runId"]),
    ]:
        assert not [e for e in kinds if isinstance(e, CancelRequested)]


def blendmesh(mesh: Mesh, *args: str) -> int:
    return cli.main(["--home", str(mesh.settings.home), *args])


async def test_cli_cancel_when_the_run_waits_prints_its_end_and_refuses_a_second_time(
    api: httpx.AsyncClient,
    mesh: tuple[Mesh, Bus],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    asked = await waiting_delete(api, "c_cli", "Cli")
    monkeypatch.setenv("NATS_URL", mesh[0].url)
    monkeypatch.setenv("BLENDMESH_PREFIX", PREFIX)
    monkeypatch.setenv("BLENDMESH_USER", "ana")
    code = await asyncio.to_thread(
        blendmesh, mesh[0], "cancel", asked["runId"], "--reason", "later", "--json"
    )
    result = json.loads(capsys.readouterr().out)
    assert code == 1 and result["status"] == "failed"
    assert result["failure"]["error_code"] == "RUN_CANCELLED"
    assert result["message"] == "ana cancelled the run: later"
    again = await asyncio.to_thread(blendmesh, mesh[0], "cancel", asked["runId"])
    assert again == 2
    assert "is failed already (cancelled by ana): nothing to cancel" in capsys.readouterr().err
