"""A revision's change list and reviews on a real mesh (real nats-server, real bpy): runs
that add, remove and change objects, mesh data, materials, modifiers and node groups, and
``blendmesh scenes diff`` naming each with its values before and after; reviews recorded
in the log; another user's scene, and revision numbers that are not the scene's, refused.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
import pytest_asyncio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from contracts import subjects
from contracts.changes import ChangeList
from contracts.reviews import MAX_NOTE_CHARS, ReviewRefused, RevisionReviewed
from services.doors.cli import main as cli
from services.doors.cli.mesh import Mesh
from services.doors.core.client import MeshClient
from services.doors.core.requests import build_request
from services.doors.core.reviews import NoRevision, Revisions, registry_approvers
from services.doors.core.scene_client import NoScene
from services.doors.gateway.app import GatewayServer, create_app
from services.doors.gateway.auth import Tokens
from services.runtime.nats.history import read_subject
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.checked_session import CheckedSession
from tests.support.mcp_plans import error_type, plan, structured
from tests.support.meshes import mesh_fixture
from tests.support.signing import register

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]
SCENE = "shot"


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    home = tmp_path_factory.mktemp("home")
    register(home, "lee", approver=True)  # a lead: reviews scenes not their own
    register(home, "bob")
    return Settings(home=home, prefix="bmchanges", user="ana", previews=False)


mesh = mesh_fixture(client="test-change-lists")


def ops(*steps: tuple[str, dict[str, Any]], destructive: tuple[str, ...] = ()) -> dict[str, Any]:
    """A plan running ``steps`` in order (each depends on the one before)."""
    operations = []
    for n, (tool, args) in enumerate(steps):
        operations.append(
            {
                "operation_id": f"s{n:02d}",
                "tool_name": tool,
                "args": args,
                "depends_on": [f"s{n - 1:02d}"] if n else [],
                "safety_level": "destructive" if tool in destructive else "safe_write",
            }
        )
    return {**plan(), "operations": operations}


BUILD = ops(
    ("object.create", {"primitive": "cube", "name": "Box"}),
    ("material.assign", {"object": "Box", "material": "Red", "base_color": [1, 0, 0]}),
    ("modifier.add", {"object": "Box", "type": "BEVEL", "properties": {"segments": 2}}),
    ("modifier.add", {"object": "Box", "type": "ARRAY"}),
    ("object.create", {"primitive": "plane", "name": "Ground"}),
    ("gn.ensure_target", {"object": "Ground", "modifier": "Lift", "allow_create_modifier": True}),
    ("object.create", {"primitive": "cube", "name": "Old"}),
)
EDIT = ops(
    ("object.transform", {"name": "Box", "location": [1, 2, 3]}),
    ("material.assign", {"object": "Box", "material": "Red", "base_color": [0, 0, 1]}),
    ("modifier.set", {"object": "Box", "name": "Bevel", "properties": {"segments": 4}}),
    ("modifier.remove", {"object": "Box", "name": "Array"}),
    ("modifier.add", {"object": "Box", "type": "SUBSURF"}),
    ("modifier.apply", {"object": "Box", "modifier": "Subdivision"}),
    ("object.delete", {"name": "Old"}),
    ("object.create", {"primitive": "cylinder", "name": "New"}),
    ("material.assign", {"object": "New", "material": "Green", "base_color": [0, 1, 0]}),
    ("modifier.add", {"object": "New", "type": "WIREFRAME"}),
    (
        "gn.add_node",
        {
            "object": "Ground",
            "modifier": "Lift",
            "node_id": "lift",
            "bl_idname": "GeometryNodeSetPosition",
        },
    ),
    ("gn.ensure_target", {"object": "New", "modifier": "Twist", "allow_create_modifier": True}),
    destructive=("modifier.apply", "object.delete"),
)
# The group's last user goes, so the saved file drops the group with it.
DROP = ops(("modifier.remove", {"object": "Ground", "name": "Lift"}))


async def committed(bus: Bus, steps: dict[str, Any], user: str = "ana", scene: str = SCENE) -> None:
    request = build_request(user=user, scene_id=scene, plan=steps, pre_approved=True)
    result = await MeshClient(bus).run(request, timeout=180)
    assert result.status == "completed", result


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def revisions(mesh: tuple[Mesh, Bus]) -> Revisions:
    """ana's scene at revision 3 (build, edit, drop) and bob's scene ``other``."""
    bus = mesh[1]
    for steps in (BUILD, EDIT, DROP):
        await committed(bus, steps)
    await committed(bus, ops(("object.create", {"primitive": "cube", "name": "B"})), "bob", "other")
    return Revisions(bus, registry_approvers(mesh[0].settings))


def entries(listed: ChangeList) -> dict[tuple[str, str], Any]:
    return {(c.kind, c.name): c for c in listed.changes}


def values(change: Any) -> dict[str, tuple[Any, Any]]:
    return {p.name: (p.before, p.after) for p in change.properties}


async def test_diff_when_a_run_edits_every_kind_names_each_change_before_and_after(
    revisions: Revisions,
) -> None:
    listed = await revisions.changes(SCENE, "ana", revision=2)

    assert (listed.base, listed.revision) == (1, 2)
    found = entries(listed)
    actions = {key: change.action for key, change in found.items()}
    assert actions[("object", "Box")] == "changed"
    assert actions[("object", "Old")] == "removed"
    assert actions[("object", "New")] == "added"
    assert actions[("material", "Red")] == "changed"
    assert actions[("material", "Green")] == "added"
    assert actions[("modifier", "Box/Bevel")] == "changed"
    assert actions[("modifier", "Box/Array")] == "removed"
    assert actions[("modifier", "New/Wireframe")] == "added"
    assert actions[("node_group", "Lift_Group")] == "changed"
    assert actions[("node_group", "Twist_Group")] == "added"
    assert values(found[("object", "Box")])["location"] == ([0.0, 0.0, 0.0], [1.0, 2.0, 3.0])
    assert values(found[("material", "Red")])["base_color"][0][:3] == [1.0, 0.0, 0.0]
    assert values(found[("material", "Red")])["base_color"][1][:3] == [0.0, 0.0, 1.0]
    assert values(found[("modifier", "Box/Bevel")])["segments"] == (2, 4)
    assert values(found[("node_group", "Lift_Group")])["node lift"] == (
        None,
        "GeometryNodeSetPosition",
    )
    # The applied Subdivision changed the Box's mesh itself; Old's cube went with Old.
    data = {c.name: c for c in listed.changes if c.kind == "data"}
    changed = [c for c in data.values() if c.action == "changed"]
    assert len(changed) == 1
    before, after = values(changed[0])["vertices"]
    assert before == 8 and after > 8
    assert {c.action for c in data.values()} == {"changed", "added", "removed"}


async def test_diff_when_a_groups_last_modifier_goes_lists_both_removed(
    revisions: Revisions,
) -> None:
    listed = await revisions.changes(SCENE, "ana")  # the head against its parent

    assert (listed.base, listed.revision) == (2, 3)
    assert {(c.kind, c.name, c.action) for c in listed.changes} >= {
        ("node_group", "Lift_Group", "removed"),
        ("modifier", "Ground/Lift", "removed"),
    }


async def test_scenes_diff_when_run_by_cli_prints_every_kind_and_its_values(
    revisions: Revisions,
    mesh: tuple[Mesh, Bus],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("NATS_URL", mesh[0].url)
    monkeypatch.setenv("BLENDMESH_PREFIX", mesh[0].settings.prefix)
    monkeypatch.setenv("BLENDMESH_USER", "ana")
    home = ["--home", str(mesh[0].settings.home)]

    code = await asyncio.to_thread(cli.main, [*home, "scenes", "diff", SCENE, "1", "2"])

    out = capsys.readouterr().out
    assert code == 0, out
    assert out.startswith("scene shot revision 2 against revision 1: objects 1 added, 1 removed")
    for line in (
        "~ object Box changed",
        "location: [0.0,0.0,0.0] -> [1.0,2.0,3.0]",
        "- object Old removed",
        "+ object New added",
        "~ material Red changed",
        "~ modifier Box/Bevel changed",
        "segments: 2 -> 4",
        "- modifier Box/Array removed",
        "~ node group Lift_Group changed",
        "+ node group Twist_Group added",
        "~ data ",
    ):
        assert line in out, line
    assert await asyncio.to_thread(cli.main, [*home, "scenes", "diff", SCENE, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["base"] == 2


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["other"], "no scene other"),
        (["nothing-here"], "no scene nothing-here"),
        ([SCENE, "1", "99"], "scene shot has no revision 99 (it has revisions 1 to 3)"),
        ([SCENE, "0"], "base revision 0 is not a revision number: revisions count from 1"),
        ([SCENE, "-3"], "base revision -3 is not a revision number"),
        ([SCENE, "1", str(2**40)], f"revision {2**40} is not a revision number"),
        ([SCENE, "two"], "base revision 'two' is not a revision number"),
        (["../etc"], "no scene ../etc"),
    ],
)
async def test_scenes_diff_when_scene_or_revision_is_not_the_callers_exits_2_naming_it(
    revisions: Revisions,
    mesh: tuple[Mesh, Bus],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    said: str,
) -> None:
    monkeypatch.setenv("NATS_URL", mesh[0].url)
    monkeypatch.setenv("BLENDMESH_PREFIX", mesh[0].settings.prefix)
    monkeypatch.setenv("BLENDMESH_USER", "ana")
    home = ["--home", str(mesh[0].settings.home)]

    code = await asyncio.to_thread(cli.main, [*home, "scenes", "diff", *args])

    assert code == 2
    assert said in capsys.readouterr().err


async def test_scenes_review_when_run_by_cli_records_it_and_refuses_a_long_note(
    revisions: Revisions,
    mesh: tuple[Mesh, Bus],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("NATS_URL", mesh[0].url)
    monkeypatch.setenv("BLENDMESH_PREFIX", mesh[0].settings.prefix)
    monkeypatch.setenv("BLENDMESH_USER", "lee")  # an approver, reviewing ana's scene
    home = ["--home", str(mesh[0].settings.home)]
    review = [*home, "scenes", "review", SCENE]

    code = await asyncio.to_thread(cli.main, [*review, "1", "approve", "--note", "clean start"])

    assert code == 0
    assert capsys.readouterr().out.strip() == "lee approved scene shot revision 1"
    listed = await revisions.changes(SCENE, "ana", revision=1)
    assert [(r.reviewer, r.note) for r in listed.reviews] == [("lee", "clean start")]
    long_note = "n" * (MAX_NOTE_CHARS + 1)
    code = await asyncio.to_thread(
        cli.main, [*review, "head", "request-changes", "--note", long_note]
    )
    assert code == 2
    assert f"more than the {MAX_NOTE_CHARS} a review keeps" in capsys.readouterr().err
    monkeypatch.setenv("BLENDMESH_USER", "bob")
    assert await asyncio.to_thread(cli.main, [*review, "1", "approve"]) == 2
    assert "no scene shot" in capsys.readouterr().err


async def test_review_when_owner_and_approver_review_records_both_in_the_log(
    revisions: Revisions, mesh: tuple[Mesh, Bus]
) -> None:
    await revisions.review(SCENE, "lee", 2, "request_changes", "the bevel reads too soft")
    await revisions.review(SCENE, "ana", 2, "approve")

    listed = await revisions.changes(SCENE, "lee", revision=2)

    assert [(r.reviewer, r.verdict, r.note) for r in listed.reviews][-2:] == [
        ("lee", "request_changes", "the bevel reads too soft"),
        ("ana", "approve", ""),
    ]
    subject = subjects.scene_events(mesh[1].prefix, SCENE, "reviewed")
    logged = await read_subject(mesh[1].js, mesh[1].prefix, subject)
    assert all(isinstance(e, RevisionReviewed) and e.scene_id == SCENE for e in logged)
    assert {e.reviewer for e in logged} >= {"lee", "ana"}
    assert (await revisions.changes(SCENE, "ana", revision=3)).reviews == []


async def test_review_when_not_allowed_or_malformed_is_refused_and_nothing_is_logged(
    revisions: Revisions, mesh: tuple[Mesh, Bus]
) -> None:
    subject = subjects.scene_events(mesh[1].prefix, "other", "reviewed")
    with pytest.raises(NoScene, match="no scene other"):
        await revisions.review("other", "ana", 1, "approve")  # bob's scene
    with pytest.raises(NoScene, match="no scene shot"):
        await revisions.review(SCENE, "bob", 1, "approve")  # bob is no approver
    with pytest.raises(NoScene, match="no scene shot"):
        await revisions.changes(SCENE, "bob")
    with pytest.raises(NoRevision, match="has no revision 7"):
        await revisions.review(SCENE, "ana", 7, "approve")
    with pytest.raises(ReviewRefused, match=f"more than the {MAX_NOTE_CHARS}"):
        await revisions.review(SCENE, "ana", 1, "approve", "n" * (MAX_NOTE_CHARS + 1))
    with pytest.raises(ReviewRefused, match="is not one of approve, request_changes"):
        await revisions.review(SCENE, "ana", 1, "ship-it")
    assert await read_subject(mesh[1].js, mesh[1].prefix, subject) == []
    logged = await read_subject(
        mesh[1].js, mesh[1].prefix, subjects.scene_events(mesh[1].prefix, SCENE, "reviewed")
    )
    assert all(e.revision != 7 and e.reviewer != "bob" for e in logged)


# -- the gateway --------------------------------------------------------------------------

TOKENS = {"tok-ana": "ana", "tok-bob": "bob", "tok-lee": "lee"}


def as_(user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer tok-{user}"}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def api(revisions: Revisions, mesh: tuple[Mesh, Bus]) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(mesh[0].settings, mesh[1], Tokens(TOKENS), run_timeout=120)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
        yield client


async def test_changes_route_when_owner_asks_lists_the_changes_and_their_text(
    api: httpx.AsyncClient,
) -> None:
    response = await api.get(f"/api/scenes/{SCENE}/changes?base=1&revision=2", headers=as_("ana"))

    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["base"], body["revision"]) == (1, 2)
    found = {(c["kind"], c["name"]): c for c in body["changes"]}
    bevel = {
        p["name"]: (p["before"], p["after"]) for p in found[("modifier", "Box/Bevel")]["properties"]
    }
    assert bevel["segments"] == (2, 4)
    assert found[("object", "Old")]["action"] == "removed"
    assert body["counts"]["object"] == {"changed": 1, "added": 1, "removed": 1}
    assert "  ~ modifier Box/Bevel changed" in body["text"]


@pytest.mark.parametrize(
    ("user", "query", "status", "said"),
    [
        ("bob", "", 404, "no scene shot"),
        ("ana", "?revision=99", 404, "has no revision 99"),
        ("ana", "?base=0", 422, None),
        ("ana", "?revision=-1", 422, None),
        ("ana", f"?revision={2**40}", 422, None),
        ("ana", "?revision=two", 422, None),
    ],
)
async def test_changes_route_when_scene_or_revision_is_not_the_callers_is_refused(
    api: httpx.AsyncClient, user: str, query: str, status: int, said: str | None
) -> None:
    response = await api.get(f"/api/scenes/{SCENE}/changes{query}", headers=as_(user))

    assert response.status_code == status, response.text
    if said is not None:
        assert said in response.json()["error"]["message"]


async def test_changes_route_when_another_users_scene_is_asked_answers_like_an_unknown_one(
    api: httpx.AsyncClient,
) -> None:
    theirs = await api.get("/api/scenes/other/changes", headers=as_("ana"))
    unknown = await api.get("/api/scenes/nothing/changes", headers=as_("ana"))
    assert theirs.status_code == unknown.status_code == 404
    assert theirs.json()["error"]["type"] == unknown.json()["error"]["type"]
    traversal = await api.get("/api/scenes/..%2Fother/changes", headers=as_("ana"))
    assert traversal.status_code in (404, 422)


async def test_review_route_when_an_approver_reviews_shows_it_with_the_changes(
    api: httpx.AsyncClient,
) -> None:
    body = {"verdict": "request_changes", "note": "lift the ground less"}
    response = await api.post(
        f"/api/scenes/{SCENE}/revisions/3/review", json=body, headers=as_("lee")
    )

    assert response.status_code == 200, response.text
    assert response.json()["reviewer"] == "lee"
    listed = (await api.get(f"/api/scenes/{SCENE}/changes", headers=as_("ana"))).json()
    assert listed["reviews"][-1] == {
        "reviewer": "lee",
        "verdict": "request_changes",
        "note": "lift the ground less",
        "at": listed["reviews"][-1]["at"],
    }
    assert "review: lee requested changes: lift the ground less" in listed["text"]


@pytest.mark.parametrize(
    ("user", "path", "body", "status"),
    [
        ("bob", "revisions/1/review", {"verdict": "approve"}, 404),
        ("ana", "revisions/99/review", {"verdict": "approve"}, 404),
        ("ana", "revisions/0/review", {"verdict": "approve"}, 422),
        ("ana", "revisions/x/review", {"verdict": "approve"}, 422),
        ("ana", "revisions/1/review", {"verdict": "merge"}, 422),
        (
            "ana",
            "revisions/1/review",
            {"verdict": "approve", "note": "n" * (MAX_NOTE_CHARS + 1)},
            422,
        ),
        ("ana", "revisions/1/review", {"verdict": "approve", "note": 7}, 422),
    ],
)
async def test_review_route_when_hostile_is_refused_and_logs_nothing(
    api: httpx.AsyncClient,
    mesh: tuple[Mesh, Bus],
    user: str,
    path: str,
    body: dict[str, Any],
    status: int,
) -> None:
    subject = subjects.scene_events(mesh[1].prefix, SCENE, "reviewed")
    before = len(await read_subject(mesh[1].js, mesh[1].prefix, subject))

    response = await api.post(f"/api/scenes/{SCENE}/{path}", json=body, headers=as_(user))

    assert response.status_code == status, response.text
    assert len(await read_subject(mesh[1].js, mesh[1].prefix, subject)) == before


# -- MCP, at the gateway's /mcp ---------------------------------------------------------


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def mcp_url(revisions: Revisions, mesh: tuple[Mesh, Bus]) -> AsyncIterator[str]:
    app = create_app(mesh[0].settings, mesh[1], Tokens(TOKENS), run_timeout=120)
    server = GatewayServer(app, port=0)
    url = await server.start()
    try:
        yield f"{url}/mcp"
    finally:
        await server.stop()


@asynccontextmanager
async def mcp_door(url: str, user: str) -> AsyncIterator[ClientSession]:
    async with (
        httpx.AsyncClient(headers=as_(user), timeout=httpx.Timeout(30, read=120)) as http,
        streamable_http_client(url, http_client=http) as (read, write, _),
        CheckedSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def test_scene_changes_tool_when_owner_asks_answers_the_list_read_only(mcp_url: str) -> None:
    async with mcp_door(mcp_url, "ana") as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        answer = await session.call_tool(
            "scene_changes", {"scene_id": SCENE, "base": 1, "revision": 2}
        )

    assert tools["scene_changes"].annotations is not None
    assert tools["scene_changes"].annotations.readOnlyHint is True
    content = structured(answer)
    assert (content["base"], content["revision"]) == (1, 2)
    found = {(c["kind"], c["name"]): c["action"] for c in content["changes"]}
    assert found[("modifier", "Box/Array")] == "removed"
    assert found[("node_group", "Twist_Group")] == "added"


@pytest.mark.parametrize(
    ("user", "args", "kind"),
    [
        ("bob", {"scene_id": SCENE}, "NotFound"),
        ("ana", {"scene_id": "other"}, "NotFound"),
        ("ana", {"scene_id": SCENE, "revision": 99}, "NotFound"),
        ("ana", {"scene_id": SCENE, "revision": -1}, "ValidationError"),
        ("ana", {"scene_id": SCENE, "base": "1"}, "ValidationError"),
        ("ana", {"scene_id": "../other"}, "ValidationError"),
    ],
)
async def test_scene_changes_tool_when_hostile_answers_an_error_naming_the_kind(
    mcp_url: str, user: str, args: dict[str, Any], kind: str
) -> None:
    async with mcp_door(mcp_url, user) as session:
        answer = await session.call_tool("scene_changes", args)

    assert error_type(answer) == kind
