"""Re-runs, forks and replays over HTTP on a real mesh (issue 42, ADR 0063): what each
route answers, that the policy still asks for a fork's revert, and every refusal."""

from __future__ import annotations

import itertools
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio

from contracts.events import Executed, RunRequested
from services.doors.cli.mesh import Mesh
from services.doors.gateway.app import create_app
from services.doors.gateway.auth import Tokens
from services.runtime.nats.history import read_run
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.meshes import mesh_fixture

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

TOKENS = {"tok-ana": "ana", "tok-ben": "ben"}
ANA = {"Authorization": "Bearer tok-ana"}
BEN = {"Authorization": "Bearer tok-ben"}
SCENES = itertools.count()


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(home=tmp_path_factory.mktemp("home"), prefix="bmsteer", user="ana")


mesh = mesh_fixture(client="test-steer")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def api(mesh: tuple[Mesh, Bus]) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(mesh[0].settings, mesh[1], Tokens(TOKENS), run_timeout=120)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
        yield client


def create(op_id: str, name: str, deps: list[str] | None = None) -> dict[str, Any]:
    return {"operation_id": op_id, "tool_name": "object.create",
            "args": {"primitive": "cube", "name": name}, "depends_on": deps or [],
            "safety_level": "safe_write"}  # fmt: skip


def move(op_id: str, name: str, deps: list[str]) -> dict[str, Any]:
    return {"operation_id": op_id, "tool_name": "object.transform",
            "args": {"name": name, "location": [1.0, 2.0, 3.0]}, "depends_on": deps,
            "safety_level": "safe_write"}  # fmt: skip


async def run(api: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    response = await api.post("/api/agent/run", json=body, headers=ANA)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


async def receipts(bus: Bus, run_id: str) -> dict[str, str]:
    events = await read_run(bus.js, bus.prefix, run_id)
    executed = [e for e in events if isinstance(e, Executed)][-1]
    return {r.operation_id: r.status for r in executed.receipts}


async def failed_run(api: httpx.AsyncClient, scene: str) -> tuple[str, list[dict[str, Any]]]:
    ops = [create("a", "Here"), create("b", "There", ["a"]), move("c", "Ghost", ["b"])]
    answer = await run(api, {"plan": {"request_id": f"req-{scene}", "operations": ops},
                             "sceneId": scene})  # fmt: skip
    assert answer["status"] == "failed", answer
    return answer["runId"], ops


@pytest.mark.clause("000-§executor-guarantees.5", "000-§executor-guarantees.6")
async def test_rerun_when_failed_completes_with_committed_operations_skipped(
    api: httpx.AsyncClient, mesh: tuple[Mesh, Bus]
) -> None:
    run_id, ops = await failed_run(api, "gw_rerun")
    edited = {"request_id": "x", "operations": [*ops[:2], move("c", "There", ["b"])]}
    response = await api.post(
        f"/api/runs/{run_id}/rerun", json={"fromOp": 2, "plan": edited}, headers=ANA
    )
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["status"] == "completed" and answer["runId"] != run_id
    assert await receipts(mesh[1], answer["runId"]) == {
        "a": "skipped_idempotent", "b": "skipped_idempotent", "c": "succeeded"
    }  # fmt: skip
    requested = (await read_run(mesh[1].js, mesh[1].prefix, answer["runId"]))[0]
    assert isinstance(requested, RunRequested) and requested.origin is not None
    assert (requested.origin.run, requested.origin.kind, requested.origin.from_op) == (
        run_id, "rerun", 2
    )  # fmt: skip
    assert requested.host.transport == "http"
    # The run detail names the door and the origin beside the timeline.
    detail = await api.get(f"/api/runs/{answer['runId']}", headers=ANA)
    assert detail.status_code == 200, detail.text
    assert detail.json()["door"] == "http"
    assert detail.json()["origin"] == {"run": run_id, "kind": "rerun", "fromOp": 2,
                                       "baseRevision": None}  # fmt: skip


async def test_fork_when_asked_over_http_waits_for_a_person_to_approve_the_revert(
    api: httpx.AsyncClient,
) -> None:
    await run(api, {"prompt": "add a cube named Base", "sceneId": "gw_fork"})
    done = await run(api, {"prompt": "add a cube named Alpha", "sceneId": "gw_fork"})
    response = await api.post(f"/api/runs/{done['runId']}/fork", headers=ANA)
    assert response.status_code == 200, response.text
    answer = response.json()
    # The fork is a run like any other: the policy asks a person about its revert.
    assert answer["status"] == "awaiting_confirmation", answer
    pending = await api.get("/api/agent/approvals/pending", headers=ANA)
    asked = next(a for a in pending.json()["approvals"] if a["runId"] == answer["runId"])
    assert [o["tool"] for o in asked["operations"]] == ["scene.revert"]
    assert asked["operations"][0]["args"] == {"revision": 1}


async def test_steering_routes_when_run_is_another_users_answer_404(
    api: httpx.AsyncClient,
) -> None:
    done = await run(api, {"prompt": "add a cube named Own", "sceneId": "gw_own"})
    for path, body in (("rerun", {"fromOp": 1}), ("fork", {})):
        response = await api.post(f"/api/runs/{done['runId']}/{path}", json=body, headers=BEN)
        assert response.status_code == 404, response.text
        assert f"no run {done['runId']}" in response.json()["error"]["message"]
    replay = await api.post("/api/replays", json={"dryRun": True}, headers=BEN)
    assert replay.status_code == 200 and replay.json()["runs"] == []


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ({"fromOp": 0}, None),
        ({"fromOp": "two"}, None),
        ({"fromOp": 2}, "has operations 1 to 1"),
        ({"fromOp": 1, "plan": {"operations": "all"}}, "not a valid operation set"),
        ({"fromOp": 1, "extra": True}, None),
    ],
)
async def test_rerun_when_arguments_are_wrong_answers_422(
    api: httpx.AsyncClient, body: dict[str, Any], said: str | None
) -> None:
    scene = f"gw_bad{next(SCENES)}"  # each a fresh one: a second "add" answers in words
    done = await run(api, {"prompt": "add a cube named Bad", "sceneId": scene})
    response = await api.post(f"/api/runs/{done['runId']}/rerun", json=body, headers=ANA)
    assert response.status_code == 422, response.text
    if said is not None:
        assert said in response.json()["error"]["message"]


async def test_steering_when_run_was_cancelled_or_id_is_not_a_token_refuses(
    api: httpx.AsyncClient,
) -> None:
    await run(api, {"prompt": "add a cube named Kept", "sceneId": "gw_cancel"})
    waiting = await run(api, {"prompt": "delete Kept", "sceneId": "gw_cancel"})
    cancelled = await api.post(f"/api/runs/{waiting['runId']}/cancel", headers=ANA)
    assert cancelled.status_code == 200, cancelled.text
    for path, body in (("rerun", {"fromOp": 1}), ("fork", {})):
        response = await api.post(f"/api/runs/{waiting['runId']}/{path}", json=body, headers=ANA)
        assert response.status_code == 409, response.text
        assert "was cancelled" in response.json()["error"]["message"]
    response = await api.post("/api/runs/run.x/fork", headers=ANA)
    assert response.status_code == 422


async def test_replay_when_dry_run_then_real_both_say_the_same(
    api: httpx.AsyncClient, mesh: tuple[Mesh, Bus]
) -> None:
    since = time.time()
    run_id, _ = await failed_run(api, "gw_replay")
    window = {"since": since, "until": time.time(), "status": "failed"}
    dry = await api.post("/api/replays", json={**window, "dryRun": True}, headers=ANA)
    assert dry.status_code == 200, dry.text
    (planned,) = dry.json()["runs"]
    assert planned["runId"] == run_id and planned["rerunId"] is not None
    verdicts = {o["operationId"]: o["verdict"] for o in planned["operations"]}
    assert verdicts == {"a": "committed", "b": "committed", "c": "runs again"}
    real = await api.post("/api/replays", json=window, headers=ANA)
    assert real.status_code == 200, real.text
    (done,) = real.json()["runs"]
    assert done["status"] == "failed"  # Ghost is still not there
    assert {o["operationId"]: o["verdict"] for o in done["operations"]} == verdicts
    assert await receipts(mesh[1], done["rerunId"]) == {
        "a": "skipped_idempotent", "b": "skipped_idempotent", "c": "rolled_back"
    }  # fmt: skip
    too_many = await api.post("/api/replays", json={"limit": 51}, headers=ANA)
    assert too_many.status_code == 422


async def test_rerun_when_edited_plan_is_over_the_operation_limit_answers_413(
    api: httpx.AsyncClient,
) -> None:
    done = await run(api, {"prompt": "add a cube named Big", "sceneId": "gw_big"})
    many = [create(f"op{i:04d}", f"C{i}") for i in range(501)]
    response = await api.post(
        f"/api/runs/{done['runId']}/rerun",
        json={"fromOp": 1, "plan": {"request_id": "x", "operations": many}},
        headers=ANA,
    )
    assert response.status_code == 413, response.text
    assert "500" in response.json()["error"]["message"]
