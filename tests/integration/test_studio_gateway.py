"""Projects, roles and locks through the HTTP API on a real mesh (real nats-server, real
bpy): each role gets exactly what the policy says, a non-member gets 404, a lock blocks
another member's run and a lead's break of it is in the log (docs/studio.md)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import mcp.types as types
import pytest
import pytest_asyncio
from mcp.client.streamable_http import streamable_http_client

from contracts import subjects
from contracts.projects import LockBroken, LockTaken
from services.doors.cli.mesh import Mesh
from services.doors.gateway.app import GatewayServer, create_app
from services.doors.gateway.auth import Tokens
from services.runtime.nats.history import read_subject
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.checked_session import CheckedSession
from tests.support.mcp_plans import create, delete, error_type, structured
from tests.support.meshes import mesh_fixture

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

PEOPLE = ("lea", "ben", "vic", "sue", "zed")  # lead, artist, viewer, supervisor, outsider
TOKENS = {f"tok-{name}": name for name in PEOPLE}
SHOT = "shot010"
SCENE = "st_shot"


def as_(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer tok-{name}"}


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(
        home=tmp_path_factory.mktemp("home"), prefix="bmstudio", user="lea", previews=False
    )


mesh = mesh_fixture(client="test-studio")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def api(mesh: tuple[Mesh, Bus]) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(mesh[0].settings, mesh[1], Tokens(TOKENS), run_timeout=120)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
        yield client


async def run(api: httpx.AsyncClient, who: str, prompt: str, scene: str = SCENE) -> httpx.Response:
    return await api.post(
        "/api/agent/run", json={"prompt": prompt, "sceneId": scene}, headers=as_(who)
    )


def ok(response: httpx.Response, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json()


def refused(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    return str(response.json()["error"]["message"])


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shot(api: httpx.AsyncClient) -> str:
    """lea's scene, filed in project shot010 with ben artist, vic viewer, sue supervisor;
    zed's own scene in a project of zed's."""
    assert ok(await run(api, "lea", "add a cube named Hero"))["status"] == "completed"
    assert ok(await run(api, "zed", "add a cube named Other", "st_other"))["status"] == "completed"
    ok(await api.post("/api/projects", json={"projectId": SHOT}, headers=as_("lea")), 201)
    for member, role in (("ben", "artist"), ("vic", "viewer"), ("sue", "supervisor")):
        body = {"role": role}
        ok(await api.put(f"/api/projects/{SHOT}/members/{member}", json=body, headers=as_("lea")))
    shown = ok(await api.put(f"/api/projects/{SHOT}/scenes/{SCENE}", headers=as_("lea")))
    assert shown["scenes"] == [SCENE] and shown["role"] == "lead"
    ok(await api.post("/api/projects", json={"projectId": "zedshow"}, headers=as_("zed")), 201)
    ok(await api.put("/api/projects/zedshow/scenes/st_other", headers=as_("zed")))
    return SCENE


async def test_members_when_listing_see_the_project_with_their_roles(
    api: httpx.AsyncClient, shot: str
) -> None:
    for who, role in (("lea", "lead"), ("ben", "artist"), ("vic", "viewer"), ("sue", "supervisor")):
        listed = ok(await api.get("/api/projects", headers=as_(who)))
        assert listed["personal"] == f"user:{who}"
        assert (SHOT, role) in [(p["projectId"], p["role"]) for p in listed["projects"]]
        scenes = ok(await api.get("/api/scenes", headers=as_(who)))["scenes"]
        assert shot in [s["sceneId"] for s in scenes]
        ok(await api.get(f"/api/scenes/{shot}", headers=as_(who)))


async def test_non_member_when_naming_the_project_or_its_scene_gets_not_found(
    api: httpx.AsyncClient, shot: str
) -> None:
    zed = as_("zed")
    assert [
        p["projectId"] for p in ok(await api.get("/api/projects", headers=zed))["projects"]
    ] == ["zedshow"]
    for path in (f"/api/projects/{SHOT}", f"/api/scenes/{shot}", f"/api/scenes/{shot}/lock"):
        assert "no " in refused(await api.get(path, headers=zed), 404)
    put = await api.put(f"/api/projects/{SHOT}/members/zed", json={"role": "lead"}, headers=zed)
    assert refused(put, 404) == f"no project {SHOT}"
    assert "no scene" in refused(
        await api.post(f"/api/scenes/{shot}/lock", json={}, headers=zed), 404
    )
    intruder = await run(api, "zed", "add a cube named Intruder", shot)
    assert refused(intruder, 404) == f"no scene {shot}"


async def test_member_of_one_project_when_naming_anothers_scene_gets_not_found(
    api: httpx.AsyncClient, shot: str
) -> None:
    ben = as_("ben")
    assert "no scene" in refused(await api.get("/api/scenes/st_other", headers=ben), 404)
    assert "no scene" in refused(await api.get("/api/scenes/st_other/lock", headers=ben), 404)
    filing = await api.put(f"/api/projects/{SHOT}/scenes/st_other", headers=ben)
    assert "no scene st_other" in refused(filing, 404)
    assert "no project" in refused(await api.get("/api/projects/zedshow", headers=ben), 404)
    stray = await run(api, "ben", "add a cube named Stray", "st_other")
    assert refused(stray, 404) == "no scene st_other"


async def test_viewer_when_running_or_managing_is_refused_naming_its_role(
    api: httpx.AsyncClient, shot: str
) -> None:
    assert "viewer" in refused(await run(api, "vic", "add a cube named Peek"), 403)
    put = await api.put(
        f"/api/projects/{SHOT}/members/zed", json={"role": "viewer"}, headers=as_("vic")
    )
    assert "viewer" in refused(put, 403)
    assert "viewer" in refused(
        await api.post(f"/api/scenes/{shot}/lock", json={}, headers=as_("vic")), 403
    )


async def test_artist_when_deleting_waits_for_a_lead_and_cannot_approve_itself(
    api: httpx.AsyncClient, shot: str
) -> None:
    made = ok(await run(api, "ben", "add a cube named Prop"))
    assert made["status"] == "completed", str(made)[:1500]
    asked = ok(await run(api, "ben", "delete Prop"))
    assert asked["status"] == "awaiting_confirmation", asked
    mine = ok(await api.get("/api/agent/approvals/pending", headers=as_("ben")))["approvals"]
    (approval,) = [a for a in mine if a["runId"] == asked["runId"]]
    assert approval["leadOf"] == SHOT and approval["user"] == "ben"
    body = {
        "approvalId": approval["approvalId"],
        "decision": "approve_once",
        "requestHash": approval["requestHash"],
    }
    own = await api.post("/api/agent/approvals/resolve", json=body, headers=as_("ben"))
    assert "waits for a lead of project shot010" in refused(own, 403)
    viewer = await api.post("/api/agent/approvals/resolve", json=body, headers=as_("vic"))
    assert refused(viewer, 404) == f"no approval {approval['approvalId']}"
    inbox = ok(await api.get("/api/agent/approvals/pending", headers=as_("lea")))["approvals"]
    # Every item of lea's inbox is an artist's run of her project (the MCP test may leave one).
    assert (approval["approvalId"], "ben") in [(a["approvalId"], a["user"]) for a in inbox]
    assert {(a["user"], a["leadOf"]) for a in inbox} == {("ben", SHOT)}
    assert ok(await api.get("/api/agent/approvals/pending", headers=as_("zed")))["approvals"] == []
    done = ok(await api.post("/api/agent/approvals/resolve", json=body, headers=as_("lea")))
    assert done["status"] == "completed", done
    run_path = f"/api/runs/{approval['runId']}"
    ok(await api.get(run_path, headers=as_("lea")))  # a lead follows what it approved
    for who in ("vic", "zed"):
        assert refused(await api.get(run_path, headers=as_(who)), 404) == (
            f"no run {approval['runId']}"
        )


async def test_lock_when_held_blocks_another_member_until_a_lead_breaks_it(
    api: httpx.AsyncClient, mesh: tuple[Mesh, Bus], shot: str
) -> None:
    taken = ok(
        await api.post(f"/api/scenes/{shot}/lock", json={"note": "animating"}, headers=as_("ben"))
    )
    assert taken["lock"]["holder"] == "ben"
    blocked = refused(await run(api, "sue", "add a cube named Blocked"), 409)
    assert "locked by ben" in blocked and "break" in blocked
    again = await api.post(f"/api/scenes/{shot}/lock", json={}, headers=as_("lea"))
    assert "locked by ben" in refused(again, 409)
    assert ok(await run(api, "ben", "add a cube named Mine"))["status"] == "completed"
    released = await api.delete(f"/api/scenes/{shot}/lock", headers=as_("lea"))
    assert "locked by ben, not you" in refused(released, 403)
    not_lead = await api.post(f"/api/scenes/{shot}/lock/break", json={}, headers=as_("vic"))
    assert "only a lead" in refused(not_lead, 403)
    ok(
        await api.post(
            f"/api/scenes/{shot}/lock/break", json={"note": "review"}, headers=as_("lea")
        )
    )
    assert ok(await api.get(f"/api/scenes/{shot}/lock", headers=as_("ben")))["lock"] is None
    assert ok(await run(api, "sue", "add a cube named Free"))["status"] == "completed"
    bus = mesh[1]
    log = await read_subject(bus.js, bus.prefix, subjects.lock_events(bus.prefix, shot))
    broken = [e for e in log if isinstance(e, LockBroken)]
    assert [(e.holder, e.by, e.note) for e in broken] == [("ben", "lea", "review")]
    assert [e.holder for e in log if isinstance(e, LockTaken)] == ["ben"]
    history = ok(await api.get(f"/api/scenes/{shot}/lock/history", headers=as_("vic")))
    assert [(e["type"], e["holder"], e["by"], e["note"]) for e in history["events"]] == [
        ("lock.taken", "ben", None, "animating"),
        ("lock.broken", "ben", "lea", "review"),
    ]
    outsider = await api.get(f"/api/scenes/{shot}/lock/history", headers=as_("zed"))
    assert refused(outsider, 404) == f"no scene {shot}"


async def test_hostile_inputs_when_sent_are_refused_with_what_was_wrong(
    api: httpx.AsyncClient, shot: str
) -> None:
    lea = as_("lea")
    assert (await api.get("/api/projects/..%2Fetc", headers=lea)).status_code in (404, 422)
    bad_id = await api.post("/api/projects", json={"projectId": "user:lea"}, headers=lea)
    assert bad_id.status_code == 422
    taken = await api.post("/api/projects", json={"projectId": SHOT}, headers=as_("zed"))
    assert "exists" in refused(taken, 409)  # ids are never reused
    role = await api.put(f"/api/projects/{SHOT}/members/ben", json={"role": "owner"}, headers=lea)
    assert role.status_code == 422
    for body in ({"ttlSeconds": 10 * 86400}, {"note": "x" * 201}, {"ttlSeconds": "soon"}):
        assert (
            await api.post(f"/api/scenes/{shot}/lock", json=body, headers=lea)
        ).status_code == 422
    ok(await api.post("/api/projects", json={"projectId": "solo"}, headers=lea), 201)
    last = await api.delete("/api/projects/solo/members/lea", headers=lea)
    assert "last lead" in refused(last, 422)
    assert (
        await api.get("/api/projects", headers={"Authorization": "Bearer nope"})
    ).status_code == 401


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def mcp_url(mesh: tuple[Mesh, Bus]) -> AsyncIterator[str]:
    app = create_app(mesh[0].settings, mesh[1], Tokens(TOKENS), run_timeout=120)
    server = GatewayServer(app, port=0)
    url = await server.start()
    try:
        yield f"{url}/mcp"
    finally:
        await server.stop()


@asynccontextmanager
async def mcp_as(
    url: str, who: str, asked: list[Any] | None = None
) -> AsyncIterator[CheckedSession]:
    """An MCP session as ``who``; with ``asked``, one that can be asked (elicitation) and
    records each question instead of answering it."""

    async def elicit(_ctx: Any, params: Any) -> types.ElicitResult:
        assert asked is not None
        asked.append(params)
        return types.ElicitResult(action="decline")

    headers = as_(who)
    async with (
        httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30, read=300)) as http,
        streamable_http_client(url, http_client=http) as (read, write, _),
        CheckedSession(
            read, write, elicitation_callback=elicit if asked is not None else None
        ) as session,
    ):
        await session.initialize()
        yield session


async def test_mcp_when_each_role_asks_gets_what_the_policy_says(mcp_url: str, shot: str) -> None:
    async with mcp_as(mcp_url, "zed") as zed:
        assert error_type(await zed.call_tool("scene", {"scene_id": shot})) == "NotFound"
        intruder = await zed.call_tool("run", {"plan": create("Intruder"), "scene_id": shot})
        assert error_type(intruder) == "NotFound" and f"no scene {shot}" in str(intruder.content)
        assert shot not in str(structured(await zed.call_tool("scenes", {})))
    async with mcp_as(mcp_url, "vic") as vic:
        assert structured(await vic.call_tool("scene", {"scene_id": shot}))["revision"] >= 1
        peek = await vic.call_tool("run", {"plan": create("Peek"), "scene_id": shot})
        assert error_type(peek) == "PolicyError" and "viewer" in str(peek.content)
    asked: list[Any] = []
    async with mcp_as(mcp_url, "ben", asked) as ben:
        made = await ben.call_tool("run", {"plan": create("McpProp"), "scene_id": shot})
        assert structured(made)["status"] == "completed", made.content
        gone = await ben.call_tool("run", {"plan": delete("McpProp"), "scene_id": shot})
        assert structured(gone)["status"] == "awaiting_confirmation", gone.content
        assert asked == []  # the run waits for a lead: the artist is not asked
        listed = structured(await ben.call_tool("scenes", {}))["scenes"]
        assert shot in str(listed)
        assert isinstance(made, types.CallToolResult)


async def test_reviews_when_asked_by_each_role_follow_the_project(
    api: httpx.AsyncClient, shot: str
) -> None:
    """A project's lead and supervisor review its scenes' revisions; an artist and a viewer
    read what a revision changed but their verdicts are refused; an outsider finds nothing."""
    for who in ("sue", "ben", "vic", "lea"):
        listed = ok(await api.get(f"/api/scenes/{shot}/changes", headers=as_(who)))
        assert listed["revision"] >= 1, listed
    head = ok(await api.get(f"/api/scenes/{shot}/changes", headers=as_("lea")))["revision"]
    path = f"/api/scenes/{shot}/revisions/{head}/review"
    body = {"verdict": "request_changes", "note": "the hero reads too small"}
    ok(await api.post(path, json=body, headers=as_("sue")))  # the supervisor
    for who in ("ben", "vic"):
        said = refused(await api.post(path, json=body, headers=as_(who)), 422)
        assert "only a lead or supervisor" in said and "you are its" in said, said
    assert "no scene" in refused(await api.post(path, json=body, headers=as_("zed")), 404)
    assert "no scene" in refused(
        await api.get(f"/api/scenes/{shot}/changes", headers=as_("zed")), 404
    )
    reviews = ok(await api.get(f"/api/scenes/{shot}/changes", headers=as_("ben")))["reviews"]
    assert [(r["reviewer"], r["verdict"]) for r in reviews] == [("sue", "request_changes")]
