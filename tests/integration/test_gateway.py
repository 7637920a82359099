"""The HTTP gateway on a real mesh: every route, every error status it answers."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
import pytest_asyncio

from contracts.events import Approved, Executed
from services.doors.cli.mesh import Mesh
from services.doors.core.client import MeshClient
from services.doors.gateway.app import create_app
from services.doors.gateway.auth import Tokens
from services.runtime.nats.history import read_run
from services.runtime.service.host import Bus
from services.runtime.service.owners import IndexBehind, LogOwners
from services.runtime.service.settings import Settings
from tests.support.meshes import mesh_fixture

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

TOKENS = {"tok-ana": "ana", "tok-ben": "ben"}
ANA = {"Authorization": "Bearer tok-ana"}
BEN = {"Authorization": "Bearer tok-ben"}
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
SEEN = "gw_seen"  # committed first: the scene whose preview is asked for
AUDIT_FIELDS = {
    "timestamp",
    "requestId",
    "operationId",
    "mcpCallId",
    "blenderMutationId",
    "toolName",
    "safetyLevel",
    "status",
    "sceneHashBefore",
    "sceneHashAfter",
}


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(home=tmp_path_factory.mktemp("home"), prefix="bmgate", user="ana")


mesh = mesh_fixture(client="test-gateway")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def api(mesh: tuple[Mesh, Bus]) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(mesh[0].settings, mesh[1], Tokens(TOKENS), run_timeout=120)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
        # The scene whose picture a test asks for is committed before any other: previews
        # are rendered one scene at a time in the order committed, so committed last it
        # waited for the pictures of every scene the module made before it.
        await run(client, {"prompt": "add a cube named Seen", "sceneId": SEEN})
        yield client


async def run(
    api: httpx.AsyncClient, body: dict[str, Any], headers: dict[str, str] = ANA
) -> dict[str, Any]:
    response = await api.post("/api/agent/run", json=body, headers=headers)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def blend_header(data: bytes) -> bytes:
    """The first bytes of a .blend; Blender writes them zstd-compressed by default."""
    if data.startswith(ZSTD_MAGIC):
        zstandard = pytest.importorskip("zstandard")
        return bytes(zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data)).read(16))
    return data[:16]


def error_type(response: httpx.Response) -> str:
    return str(response.json()["error"]["type"])


async def waiting_delete(api: httpx.AsyncClient, scene: str, name: str) -> dict[str, Any]:
    await run(api, {"prompt": f"add a cube named {name}", "sceneId": scene})
    answer = await run(api, {"prompt": f"delete {name}", "sceneId": scene})
    assert answer["status"] == "awaiting_confirmation", answer
    return answer


async def pending_for(api: httpx.AsyncClient, run_id: str, headers: dict[str, str] = ANA) -> Any:
    response = await api.get("/api/agent/approvals/pending", headers=headers)
    assert response.status_code == 200, response.text
    return next((a for a in response.json()["approvals"] if a["runId"] == run_id), None)


# -- auth -------------------------------------------------------------------------------


@pytest.mark.clause("002-§core-loop.1", "002-§errors.2")
async def test_runs_when_no_token_answers_401_with_challenge(api: httpx.AsyncClient) -> None:
    response = await api.get("/api/runs")
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert error_type(response) == "AuthError"


@pytest.mark.clause("002-§core-loop.1", "002-§errors.2")
async def test_run_when_bad_token_answers_401_before_reading_body(api: httpx.AsyncClient) -> None:
    response = await api.post(
        "/api/agent/run", content=b"{not json", headers={"Authorization": "Bearer nope"}
    )
    assert response.status_code == 401
    assert "nope" not in response.text


# -- bodies -----------------------------------------------------------------------------


async def test_run_when_body_is_not_json_answers_400(api: httpx.AsyncClient) -> None:
    response = await api.post(
        "/api/agent/run",
        content=b"{not json",
        headers={**ANA, "Content-Type": "application/json"},
    )
    assert response.status_code == 400
    assert error_type(response) == "ValidationError"


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"prompt": "add a cube", "plan": {"operations": []}},
        {"prompt": "add a cube", "sceneId": "no/such.scene"},
        {"prompt": "add a cube", "unknown": 1},
        {"prompt": ""},
        {"prompt": "add a cube", "focus": {"active": "x" * 64}},
        {"prompt": "add a cube", "focus": {"selected": ["Box"] * 501}},
        {"prompt": "add a cube", "focus": {"selected": [""]}},
        {"prompt": "add a cube", "focus": {"selected": "Box"}},
        {"prompt": "add a cube", "focus": {"chosen": ["Box"]}},
    ],
)
@pytest.mark.clause("002-§route-contract.1", "002-§errors.1", "002-§errors.6")
async def test_run_when_body_invalid_answers_422_without_echo(
    api: httpx.AsyncClient, body: dict[str, Any]
) -> None:
    response = await api.post("/api/agent/run", json=body, headers=ANA)
    assert response.status_code == 422, response.text
    assert error_type(response) == "ValidationError"
    assert "add a cube" not in response.text


async def test_resolve_when_decision_unknown_answers_422(api: httpx.AsyncClient) -> None:
    body = {"approvalId": "x", "decision": "maybe", "requestHash": "h"}
    response = await api.post("/api/agent/approvals/resolve", json=body, headers=ANA)
    assert response.status_code == 422


# -- runs -------------------------------------------------------------------------------


@pytest.mark.clause(
    "002-§route-contract.1",
    "002-§route-contract.2",
    "002-§route-contract.3",
    "002-§route-contract.4",
)
async def test_run_when_prompt_given_completes_with_actions(api: httpx.AsyncClient) -> None:
    answer = await run(api, {"prompt": "add a cube named Box at 0 0 1", "sceneId": "gw_one"})
    assert answer["ok"] is True and answer["status"] == "completed"
    (action,) = answer["actions"]
    timed = ("createdAt", "updatedAt")  # times of this run: the next test checks them
    assert {k: v for k, v in action.items() if k not in timed} == {
        "operationId": "op01",
        "tool": "object.create",
        "status": "completed",
        "requiresApproval": False,
        "stepId": None,
        "determinismClass": "deterministic",
        "seed": None,
        "errorCode": None,  # spec 001's code, on a failed operation only
    }
    assert all(action[k] for k in timed)
    assert answer["scenePath"] == "/api/scenes/gw_one.blend"
    assert answer["failure"] is None and answer["runId"] and answer["threadId"]


@pytest.mark.clause("002-§audit.8")
async def test_run_when_completed_each_action_says_when_planned_and_last_changed(
    api: httpx.AsyncClient,
) -> None:
    before = datetime.now(UTC)
    answer = await run(api, {"prompt": "add a cube named Clock", "sceneId": "gw_times"})
    (action,) = answer["actions"]
    created = datetime.fromisoformat(action["createdAt"])
    updated = datetime.fromisoformat(action["updatedAt"])
    assert before - timedelta(seconds=5) <= created <= updated <= datetime.now(UTC)
    assert updated > created  # planned, then executed: its last change came later


@pytest.mark.clause("002-§core-loop.2")
async def test_run_when_thread_continued_by_owner_keeps_thread(api: httpx.AsyncClient) -> None:
    first = await run(api, {"prompt": "add a cube named T1", "sceneId": "gw_thread"})
    again = await run(
        api,
        {"prompt": "add a cube named T2", "sceneId": "gw_thread", "threadId": first["threadId"]},
    )
    assert again["threadId"] == first["threadId"] and again["status"] == "completed"


@pytest.mark.clause("002-§core-loop.2")
async def test_run_when_thread_is_another_users_answers_404(api: httpx.AsyncClient) -> None:
    first = await run(api, {"prompt": "add a cube named Mine", "sceneId": "gw_thread2"})
    body = {"prompt": "delete Mine", "threadId": first["threadId"]}
    response = await api.post("/api/agent/run", json=body, headers=BEN)
    assert response.status_code == 404
    assert error_type(response) == "NotFound"


async def test_run_when_plan_invalid_answers_failed_run(api: httpx.AsyncClient) -> None:
    plan = {
        "request_id": "gw-bad-plan",
        "operations": [
            {
                "operation_id": "a",
                "tool_name": "python.exec",
                "args": {},
                "depends_on": [],
                "safety_level": "safe_write",
            }
        ],
    }
    answer = await run(api, {"plan": plan, "sceneId": "gw_plan"})
    assert answer["ok"] is False and answer["status"] == "failed"
    assert answer["failure"]["errorCode"] == "TOOL_UNKNOWN"
    assert answer["failure"]["type"] == "ValidationError"


async def test_run_when_no_answer_in_time_answers_504(mesh: tuple[Mesh, Bus]) -> None:
    app = create_app(mesh[0].settings, mesh[1], Tokens(TOKENS), run_timeout=0.001)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
        body = {"prompt": "add a cube named Slow", "sceneId": "gw_slow"}
        response = await client.post("/api/agent/run", json=body, headers=ANA)
    assert response.status_code == 504
    assert error_type(response) == "Timeout" and "/api/runs/run-" in response.text


async def test_runs_when_audit_service_absent_answers_503(mesh: tuple[Mesh, Bus]) -> None:
    lonely = await Bus.open(mesh[0].url, "bmnobody", "test-gateway-lonely", mesh[0].login("admin"))
    try:
        app = create_app(mesh[0].settings, lonely, Tokens(TOKENS))
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
            response = await client.get("/api/runs", headers=ANA)
    finally:
        await lonely.close()
    assert response.status_code == 503 and error_type(response) == "Unavailable"


async def test_scene_when_ownership_index_lags_still_knows_its_owner(
    api: httpx.AsyncClient, mesh: tuple[Mesh, Bus]
) -> None:
    """A scene's owner is in its head revision, read consistently: no index to wait for."""
    await run(api, {"prompt": "add a cube named Lag", "sceneId": "gw_lag"})  # a fact to index

    app = create_app(mesh[0].settings, mesh[1], Tokens(TOKENS))
    stalled = app.state.gateway.owners = LogOwners(mesh[1])
    await stalled.close()  # an index that answers nothing at all
    with pytest.raises(IndexBehind):
        await stalled.current()
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
        mine = await client.get("/api/scenes/gw_lag.blend", headers=ANA)
        theirs = await client.get("/api/scenes/gw_lag.blend", headers=BEN)
    assert mine.status_code == 200 and theirs.status_code == 404


async def test_runs_when_listed_show_only_callers_runs(api: httpx.AsyncClient) -> None:
    mine = await run(api, {"prompt": "add a cube named Listed", "sceneId": "gw_list"})
    theirs = await run(api, {"prompt": "add a cube named Other", "sceneId": "gw_list_b"}, BEN)
    ana = (await api.get("/api/runs", headers=ANA)).json()["runs"]
    ben = (await api.get("/api/runs", headers=BEN)).json()["runs"]
    assert mine["runId"] in {r["runId"] for r in ana}
    assert theirs["runId"] not in {r["runId"] for r in ana}
    assert {r["runId"] for r in ben} == {theirs["runId"]}
    row = next(r for r in ana if r["runId"] == mine["runId"])
    assert row["status"] == "completed" and row["sceneId"] == "gw_list"
    assert {"threadId", "createdAt", "updatedAt", "errorCode"} <= row.keys()


async def test_run_detail_when_owner_asks_has_timeline(api: httpx.AsyncClient) -> None:
    answer = await run(api, {"prompt": "add a cube named Timed", "sceneId": "gw_detail"})
    response = await api.get(f"/api/runs/{answer['runId']}", headers=ANA)
    assert response.status_code == 200
    detail = response.json()
    assert detail["run"]["runId"] == answer["runId"]
    assert detail["timeline"][0]["type"] == "run.requested"
    assert detail["timeline"][-1]["type"] == "run.completed"
    assert all({"seq", "type", "at", "detail", "facts"} == t.keys() for t in detail["timeline"])
    # Laid out as `blendmesh runs show` prints it (issue 42).
    (op,) = detail["operations"]
    assert op["tool"] == "object.create" and op["args"]["name"] == "Timed"
    assert op["decision"] == "allow" and op["approvedBy"] == "policy"
    assert op["status"] == "succeeded" and op["sceneHashBefore"] != op["sceneHashAfter"]
    assert isinstance(detail["revision"], int)
    assert detail["gates"] and detail["gates"][0]["revision"] == detail["revision"]
    planned, executed = detail["versions"]["planned"], detail["versions"]["executed"]
    assert planned["catalogVersion"] == executed["catalogVersion"] != ""
    assert executed["blendmeshVersion"] and executed["blenderVersion"]


async def test_run_detail_when_another_user_asks_answers_404(api: httpx.AsyncClient) -> None:
    answer = await run(api, {"prompt": "add a cube named Private", "sceneId": "gw_private"})
    paths = ("", "/audit", "/operations")
    for path in (f"/api/runs/{answer['runId']}{tail}" for tail in paths):
        response = await api.get(path, headers=BEN)
        assert response.status_code == 404, path
    unknown = await api.get("/api/runs/run-unknown", headers=ANA)
    assert unknown.status_code == 404 and error_type(unknown) == "NotFound"
    unknown = await api.get("/api/runs/run-unknown/operations", headers=ANA)
    assert unknown.status_code == 404 and error_type(unknown) == "NotFound"
    hostile = await api.get("/api/runs/..%2Fscenes/operations", headers=ANA)
    assert hostile.status_code in (404, 422)
    overlong = await api.get(f"/api/runs/{'r' * 129}/operations", headers=ANA)
    assert overlong.status_code == 422
    anonymous = await api.get(f"/api/runs/{answer['runId']}/operations")
    assert anonymous.status_code == 401


async def test_run_operations_when_committed_list_what_ran_in_order(
    api: httpx.AsyncClient,
) -> None:
    prompt = "add a cube named Rop at 0 0 1, then move Rop to 2 0 1"
    answer = await run(api, {"prompt": prompt, "sceneId": "gw_ops"})
    response = await api.get(f"/api/runs/{answer['runId']}/operations", headers=ANA)
    assert response.status_code == 200
    ran = response.json()
    assert ran["sceneId"] == "gw_ops" and ran["prompt"] == prompt
    assert ran["committed"] is True and ran["sceneHash"]
    assert [(o["tool"], o["state"]) for o in ran["operations"]] == [
        ("object.create", "completed"),
        ("object.transform", "completed"),
    ]
    assert ran["operations"][0]["args"]["name"] == "Rop"
    assert ran["operations"][1]["args"]["location"] == [2, 0, 1]


@pytest.mark.clause(
    "000-§correlation.6",
    "000-§audit-record.1",
    "000-§audit-record.2",
    "000-§audit-record.3",
    "000-§audit-record.4",
    "000-§audit-record.5",
    "000-§audit-record.6",
    "000-§audit-record.7",
    "000-§audit-record.8",
    "000-§audit-record.9",
    "000-§audit-record.10",
)
@pytest.mark.clause("002-§core-loop.13")
async def test_audit_when_run_completed_has_spec_000_fields(api: httpx.AsyncClient) -> None:
    answer = await run(
        api, {"prompt": "add a cube named A1, then add a cube named A2", "sceneId": "gw_audit"}
    )
    response = await api.get(f"/api/runs/{answer['runId']}/audit", headers=ANA)
    assert response.status_code == 200
    records = response.json()["records"]
    assert [r["operationId"] for r in records] == ["op01", "op02", "gates@1"]
    *operations, gates = records
    for record in operations:
        assert record.keys() >= AUDIT_FIELDS
        assert record["status"] == "succeeded" and record["toolName"] == "object.create"
        assert record["sceneHashBefore"] and record["sceneHashAfter"]
    # The guardians' verdict on the committed revision is on the audit trail too.
    assert gates["toolName"] == "guardians" and gates["status"] == "gates_passed"
    assert answer["gates"] == {"success": True, "failedGates": [], "messages": []}


# -- streaming --------------------------------------------------------------------------


@pytest.mark.clause("002-§streaming.1", "002-§streaming.2", "002-§streaming.3", "002-§streaming.4")
async def test_stream_when_run_completes_yields_status_deltas_result(
    api: httpx.AsyncClient,
) -> None:
    body = {"prompt": "add a cube named Streamed", "sceneId": "gw_stream"}
    response = await api.post("/api/agent/run/stream", json=body, headers=ANA)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in response.text.splitlines()]
    assert lines[0]["type"] == "status" and lines[0]["status"] == "planning"
    assert lines[0]["threadId"] and lines[0]["runId"]
    deltas = [line["delta"] for line in lines[1:-1]]
    assert all(line["type"] == "delta" for line in lines[1:-1]) and deltas
    assert any("op01 object.create" in d for d in deltas)
    assert not any("[/]" in d or "[green]" in d for d in deltas)
    assert lines[-1]["type"] == "result"
    assert lines[-1]["result"]["status"] == "completed"
    assert lines[-1]["result"]["runId"] == lines[0]["runId"]


async def test_stream_when_thread_is_another_users_answers_404(api: httpx.AsyncClient) -> None:
    first = await run(api, {"prompt": "add a cube named S1", "sceneId": "gw_stream2"})
    body = {"prompt": "add a cube", "threadId": first["threadId"]}
    response = await api.post("/api/agent/run/stream", json=body, headers=BEN)
    assert response.status_code == 404


# -- approvals --------------------------------------------------------------------------


@pytest.mark.clause(
    "002-§route-contract.4", "002-§approvals.1", "002-§approvals.4", "002-§core-loop.11"
)
async def test_destructive_run_when_approved_completes_once(api: httpx.AsyncClient) -> None:
    waiting = await waiting_delete(api, "gw_approve", "Doomed")
    assert waiting["ok"] is True and waiting["scenePath"] is None
    assert waiting["actions"][0]["requiresApproval"] is True
    assert waiting["actions"][0]["status"] == "awaiting_confirmation"
    pending = await pending_for(api, waiting["runId"])
    assert pending is not None and pending["requestHash"] and pending["reason"]
    assert pending["operations"] == [
        {
            "operationId": "op01",
            "tool": "object.delete",
            "safetyLevel": "destructive",
            "args": {"name": "Doomed"},
        }
    ]
    assert await pending_for(api, waiting["runId"], BEN) is None
    body = {
        "approvalId": pending["approvalId"],
        "decision": "approve_once",
        "requestHash": pending["requestHash"],
    }
    response = await api.post("/api/agent/approvals/resolve", json=body, headers=ANA)
    assert response.status_code == 200, response.text
    done = response.json()
    assert done["status"] == "completed" and done["runId"] == waiting["runId"]
    assert done["actions"][0]["status"] == "completed"
    assert await pending_for(api, waiting["runId"]) is None
    again = await api.post(
        "/api/agent/approvals/resolve", json={**body, "decision": "reject"}, headers=ANA
    )
    assert again.status_code == 200 and again.json()["status"] == "completed"


async def test_resolve_when_another_just_resolved_it_answers_how_the_run_ended(
    api: httpx.AsyncClient, mesh: tuple[Mesh, Bus]
) -> None:
    """A resolution that arrives once another's is in the log, while the run still
    executes, answers the run's end as the winner hears it, not "executing"."""
    waiting = await waiting_delete(api, "gw_late", "Late")
    pending = await pending_for(api, waiting["runId"])
    await MeshClient(mesh[1]).answer(waiting["runId"], "approve_once", "ana")  # not followed
    body = {
        "approvalId": pending["approvalId"],
        "decision": "approve_once",
        "requestHash": pending["requestHash"],
    }
    late = await api.post("/api/agent/approvals/resolve", json=body, headers=ANA)
    assert late.status_code == 200, late.text
    assert late.json()["status"] == "completed", late.json()
    events = await read_run(mesh[1].js, mesh[0].settings.prefix, waiting["runId"])
    assert sum(isinstance(e, Approved) for e in events) == 1


async def test_resolve_when_eight_race_for_one_approval_one_wins_and_all_answer_it(
    api: httpx.AsyncClient, mesh: tuple[Mesh, Bus]
) -> None:
    """The red team saw three of eight concurrent resolutions answer 504 within 0.03 s."""
    waiting = await waiting_delete(api, "gw_race", "Raced")
    pending = await pending_for(api, waiting["runId"])
    body = {
        "approvalId": pending["approvalId"],
        "decision": "approve_once",
        "requestHash": pending["requestHash"],
    }
    answers = await asyncio.gather(
        *(api.post("/api/agent/approvals/resolve", json=body, headers=ANA) for _ in range(8))
    )
    assert [a.status_code for a in answers] == [200] * 8, [a.text for a in answers]
    assert {a.json()["status"] for a in answers} == {"completed"}
    events = await read_run(mesh[1].js, mesh[0].settings.prefix, waiting["runId"])
    assert sum(isinstance(e, Approved) and e.approved_by == "ana" for e in events) == 1
    assert sum(isinstance(e, Executed) for e in events) == 1


@pytest.mark.clause("002-§approvals.3", "002-§errors.3")
async def test_destructive_run_when_rejected_fails_with_policy_error(
    api: httpx.AsyncClient,
) -> None:
    waiting = await waiting_delete(api, "gw_reject", "Precious")
    pending = await pending_for(api, waiting["runId"])
    body = {
        "approvalId": pending["approvalId"],
        "decision": "reject",
        "requestHash": pending["requestHash"],
    }
    response = await api.post("/api/agent/approvals/resolve", json=body, headers=ANA)
    assert response.status_code == 200, response.text
    done = response.json()
    assert done["status"] == "failed" and done["ok"] is False
    assert done["failure"]["errorCode"] == "APPROVAL_REJECTED"
    assert done["failure"]["type"] == "PolicyError"
    assert done["actions"][0]["status"] == "rejected"


async def test_resolve_when_hash_stale_answers_409_and_keeps_waiting(
    api: httpx.AsyncClient,
) -> None:
    waiting = await waiting_delete(api, "gw_stale", "Kept")
    pending = await pending_for(api, waiting["runId"])
    body = {
        "approvalId": pending["approvalId"],
        "decision": "approve_once",
        "requestHash": "0" * 64,
    }
    response = await api.post("/api/agent/approvals/resolve", json=body, headers=ANA)
    assert response.status_code == 409 and error_type(response) == "Conflict"
    assert await pending_for(api, waiting["runId"]) is not None


async def test_resolve_when_another_users_approval_answers_404(api: httpx.AsyncClient) -> None:
    waiting = await waiting_delete(api, "gw_theirs", "Theirs")
    pending = await pending_for(api, waiting["runId"])
    body = {
        "approvalId": pending["approvalId"],
        "decision": "approve_once",
        "requestHash": pending["requestHash"],
    }
    response = await api.post("/api/agent/approvals/resolve", json=body, headers=BEN)
    assert response.status_code == 404
    unknown = {**body, "approvalId": "no-such-approval"}
    response = await api.post("/api/agent/approvals/resolve", json=unknown, headers=ANA)
    assert response.status_code == 404
    assert await pending_for(api, waiting["runId"]) is not None


# -- scenes -----------------------------------------------------------------------------


async def test_scene_blend_when_owner_asks_returns_blend(api: httpx.AsyncClient) -> None:
    await run(api, {"prompt": "add a cube named Saved", "sceneId": "gw_blend"})
    response = await api.get("/api/scenes/gw_blend.blend", headers=ANA)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/octet-stream"
    assert blend_header(response.content).startswith(b"BLENDER")


async def test_scene_blend_when_not_callers_answers_404(api: httpx.AsyncClient) -> None:
    await run(api, {"prompt": "add a cube named Hers", "sceneId": "gw_hers"})
    assert (await api.get("/api/scenes/gw_hers.blend", headers=BEN)).status_code == 404
    assert (await api.get("/api/scenes/gw_never.blend", headers=ANA)).status_code == 404
    assert (await api.get("/api/scenes/gw_hers/preview.png", headers=BEN)).status_code == 404


async def test_scene_when_another_user_names_it_in_a_run_grants_nothing(
    api: httpx.AsyncClient,
) -> None:
    """The red team's claim: a run naming a scene, even a failed one, gave the scene away."""
    await run(api, {"prompt": "add a cube named Keep", "sceneId": "gw_claimed"})
    for prompt in ("paint the sky", "delete Keep"):
        body = {"prompt": prompt, "sceneId": "gw_claimed"}
        refused = await api.post("/api/agent/run", json=body, headers=BEN)
        assert refused.status_code == 404, refused.text  # as for a scene nobody has
        assert refused.json()["error"]["message"] == "no scene gw_claimed"
    for path in ("/api/scenes/gw_claimed.blend", "/api/scenes/gw_claimed/preview.png"):
        assert (await api.get(path, headers=BEN)).status_code == 404
    assert (await api.get("/api/scenes/gw_claimed.blend", headers=ANA)).status_code == 200


async def test_scene_when_named_first_by_a_failed_run_belongs_to_whoever_commits_it(
    api: httpx.AsyncClient,
) -> None:
    failed = await run(api, {"prompt": "paint the sky", "sceneId": "gw_first"}, BEN)
    assert failed["status"] == "failed"
    await run(api, {"prompt": "add a cube named Hers", "sceneId": "gw_first"})
    assert (await api.get("/api/scenes/gw_first.blend", headers=BEN)).status_code == 404
    assert (await api.get("/api/scenes/gw_first.blend", headers=ANA)).status_code == 200


async def test_scene_blend_when_only_rejected_plan_answers_404(api: httpx.AsyncClient) -> None:
    answer = await run(api, {"prompt": "paint the sky", "sceneId": "gw_empty"})
    assert answer["status"] == "failed"
    response = await api.get("/api/scenes/gw_empty.blend", headers=ANA)
    assert response.status_code == 404 and error_type(response) == "NotFound"


async def test_preview_when_scene_never_committed_answers_404(api: httpx.AsyncClient) -> None:
    answer = await run(api, {"prompt": "paint the sea", "sceneId": "gw_unseen"})
    assert answer["status"] == "failed"
    response = await api.get("/api/scenes/gw_unseen/preview.png", headers=ANA)
    assert response.status_code == 404 and error_type(response) == "NotFound"


async def test_preview_when_scene_committed_returns_png(api: httpx.AsyncClient) -> None:
    # SEEN was committed as ``api`` was set up. The preview is rendered after the run's
    # result went out, by a Blender started on demand (ADR 0033): on a machine busy with
    # other tests' Blenders that takes a while.
    for _ in range(1200):
        response = await api.get(f"/api/scenes/{SEEN}/preview.png", headers=ANA)
        if response.status_code != 404:
            break
        await asyncio.sleep(0.1)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "image/png"
    assert response.content.startswith(b"\x89PNG")
