"""The Blender add-on in a real Blender (the venv's bpy, in a child process) against a
real mesh and its gateway on a real port: it registers, pushes, asks, approves, rejects,
pulls and follows, and never throws away what the artist changed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from services.bridge.blendfiles.references import library_paths
from services.doors.cli.mesh import Mesh
from services.doors.gateway.app import GatewayServer, create_app
from services.doors.gateway.auth import Tokens
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.blender_addon import BlenderSession
from tests.support.meshes import mesh_fixture
from tests.support.shot_files import HERO_X, make_shot, opened

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(600),
    pytest.mark.asyncio(loop_scope="module"),
]
TOKENS = {"tok-ana": "ana", "tok-ben": "ben"}
ANA = {"Authorization": "Bearer tok-ana"}


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    # No picture is looked at here: a Blender rendering every commit would only compete
    # with the runs for the CPU, and a stop would wait for its last render.
    return Settings(
        home=tmp_path_factory.mktemp("home"), prefix="bmaddon", user="ana", previews=False
    )


mesh = mesh_fixture(client="test-addon")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gateway_url(mesh: tuple[Mesh, Bus]) -> AsyncIterator[str]:
    app = create_app(mesh[0].settings, mesh[1], Tokens(TOKENS), run_timeout=240)
    server = GatewayServer(app, port=0)
    url = await server.start()
    try:
        yield url
    finally:
        await server.stop()


@pytest_asyncio.fixture(loop_scope="module")
async def blender(tmp_path: Path, gateway_url: str) -> AsyncIterator[BlenderSession]:
    session = await BlenderSession.start(tmp_path / "artist")
    try:
        yield session
    finally:
        await session.close()


async def as_ana(blender: BlenderSession, url: str, scene: str) -> None:
    await blender.send(do="prefs", url=url, token="tok-ana")
    await blender.send(do="scene", scene=scene)


async def other_door(url: str, prompt: str, scene: str) -> dict[str, Any]:
    """A run on the scene made without the add-on, as the CLI or an MCP host would."""
    async with httpx.AsyncClient(base_url=url, timeout=240) as http:
        response = await http.post(
            "/api/agent/run",
            json={"prompt": prompt, "sceneId": scene},
            headers={"Authorization": "Bearer tok-ana"},
        )
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def tools(approval: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(op["tool"], op["args"]) for op in approval["operations"]]


async def test_addon_when_installed_registers_operators_and_a_secret_token(
    blender: BlenderSession, gateway_url: str
) -> None:
    shown = await blender.send(do="prefs", url=gateway_url, token="tok-ana")
    assert {"push", "ask", "approve", "reject", "cancel_run", "pull", "keep", "follow"} <= set(
        shown["ops"]
    )
    assert shown["tokenSubtype"] == "PASSWORD"


async def test_addon_when_artist_pushes_asks_approves_and_pulls_brings_each_revision(
    blender: BlenderSession, gateway_url: str
) -> None:
    await as_ana(blender, gateway_url, "room")
    pushed = await blender.send(do="op", name="push")
    assert pushed["error"] == "" and pushed["synced"] == {"scene": "room", "rev": 1}, pushed
    asked = await blender.send(
        do="op", name="ask", args={"prompt": "add a cube named Box at 0 0 2"}
    )
    assert asked["run"]["status"] == "completed" and asked["error"] == "", asked
    assert asked["progress"] and "In your session: revision 2" in asked["notice"], asked
    assert asked["synced"] == {"scene": "room", "rev": 2} and "Box" in asked["objects"]
    pulled = await blender.send(do="op", name="pull")
    assert pulled["error"] == "" and pulled["synced"] == {"scene": "room", "rev": 2}, pulled
    assert "Box" in pulled["objects"] and pulled["scene"] == "room"
    assert Path(pulled["filepath"]) == blender.home / "blendmesh" / "room.blend"

    waiting = await blender.send(do="op", name="ask", args={"prompt": "delete Box"})
    assert waiting["run"]["status"] == "awaiting_confirmation", waiting
    [approval] = waiting["approvals"]
    assert tools(approval) == [("object.delete", {"name": "Box"})]
    approved = await blender.send(do="op", name="approve")
    assert approved["run"]["status"] == "completed" and approved["approvals"] == [], approved
    pulled = await blender.send(do="op", name="pull")
    assert "Box" not in pulled["objects"] and pulled["synced"]["rev"] == 3, pulled

    waiting = await blender.send(do="op", name="ask", args={"prompt": "delete Cube"})
    rejected = await blender.send(
        do="op", name="reject", args={"approval_id": waiting["approvals"][0]["approvalId"]}
    )
    assert rejected["run"]["status"] == "failed"
    assert "APPROVAL_REJECTED" in rejected["error"] and rejected["approvals"] == []
    assert "Cube" in rejected["objects"]


async def test_what_changed_when_asked_after_a_run_lists_the_revisions_changes(
    blender: BlenderSession, gateway_url: str
) -> None:
    await as_ana(blender, gateway_url, "listed")
    early = await blender.send(do="op", name="changes")
    assert "push or pull first" in early["error"], early
    pushed = await blender.send(do="op", name="push")
    assert pushed["synced"] == {"scene": "listed", "rev": 1}, pushed
    asked = await blender.send(
        do="op", name="ask", args={"prompt": "add a cube named Box at 0 0 2"}
    )
    assert asked["synced"] == {"scene": "listed", "rev": 2}, asked

    shown = await blender.send(do="op", name="changes")

    assert shown["error"] == "", shown
    assert shown["changes"][0].startswith(
        "scene listed revision 2 against revision 1: objects 1 added"
    )
    assert "  + object Box added" in shown["changes"]
    assert "      location: [0.0,0.0,2.0]" in shown["changes"]


async def test_live_edit_when_artist_asks_lands_in_the_open_session_as_one_undo_step(
    blender: BlenderSession, gateway_url: str
) -> None:
    await as_ana(blender, gateway_url, "live")
    pushed = await blender.send(do="op", name="push")
    assert pushed["synced"] == {"scene": "live", "rev": 1}, pushed
    await blender.send(do="edit", name="Mine")  # unsaved, not on the mesh
    # Ask pushes the artist's change first; as an import it waits for approval.
    first = await blender.send(do="op", name="ask", args={"prompt": "add a cube named Box"})
    assert "pushed first" in first["notice"] and first["approvals"], first
    assert first["approvals"][0]["operations"][0]["tool"] == "scene.import"
    approved = await blender.send(do="op", name="approve")
    assert approved["synced"] == {"scene": "live", "rev": 2}, approved
    assert approved["notice"] == "Pushed as revision 2 of scene live.", approved["notice"]

    asked = await blender.send(
        do="op", name="ask", args={"prompt": "add a cube named Box at 0 0 2"}
    )
    assert asked["error"] == "" and asked["synced"] == {"scene": "live", "rev": 3}, asked
    assert {"Box", "Mine"} <= set(asked["objects"]) and asked["filepath"] == ""  # no reload
    assert "Ctrl-Z undoes it" in asked["notice"]
    undone = await blender.send(do="undo")
    assert "Box" not in undone["objects"] and "Mine" in undone["objects"], undone
    redone = await blender.send(do="redo")
    assert {"Box", "Mine"} <= set(redone["objects"]), redone

    # A run made through another door on the same scene comes in the same way.
    await other_door(gateway_url, "add a cone named Tip at 1 0 0", "live")
    followed = await blender.send(do="synced", rev=4)
    assert followed["synced"]["rev"] == 4 and "Tip" in followed["objects"], followed
    assert followed["error"] == "" and followed["filepath"] == ""

    # Lights and cameras come in live too.
    await other_door(gateway_url, "add a sun light named Key at 0 0 5 with power 3", "live")
    await other_door(gateway_url, "add a camera named Shot at 6 -6 4 looking at Box", "live")
    lit = await blender.send(do="synced", rev=6)
    assert lit["synced"]["rev"] == 6 and {"Key", "Shot"} <= set(lit["objects"]), lit
    assert lit["error"] == "", lit["error"]
    # And keyframes.
    await other_door(gateway_url, "keyframe Box location at frame 20", "live")
    keyed = await blender.send(do="synced", rev=7)
    assert keyed["synced"]["rev"] == 7 and keyed["error"] == "", keyed["error"]
    assert "Box" in keyed["animated"] and "Box" not in lit["animated"]

    # A waiting request the artist cancels in the panel ends, and nothing changes.
    waiting = await blender.send(do="op", name="ask", args={"prompt": "delete Box"})
    assert waiting["run"]["status"] == "awaiting_confirmation", waiting
    cancelled = await blender.send(do="op", name="cancel_run")
    assert cancelled["run"]["status"] == "failed" and cancelled["approvals"] == [], cancelled
    assert "RUN_CANCELLED" in cancelled["notice"] + cancelled["error"], cancelled
    assert "Box" in cancelled["objects"] and cancelled["synced"]["rev"] == 7, cancelled

    # A destructive request waits, is approved in the panel, and lands live too.
    waiting = await blender.send(do="op", name="ask", args={"prompt": "delete Tip"})
    assert waiting["run"]["status"] == "awaiting_confirmation", waiting
    gone = await blender.send(do="op", name="approve")
    assert "Tip" not in gone["objects"] and gone["synced"]["rev"] == 8, gone


async def test_live_edit_when_following_is_off_the_run_asked_here_lands_with_its_answer(
    blender: BlenderSession, gateway_url: str
) -> None:
    # No look at the scene ever runs: what lands came with the run's own answer.
    await blender.send(do="prefs", url=gateway_url, token="tok-ana", follow=False)
    await blender.send(do="scene", scene="live_now")
    assert (await blender.send(do="op", name="push"))["synced"]["rev"] == 1
    asked = await blender.send(do="op", name="ask", args={"prompt": "add a cube named Now"})
    assert asked["synced"] == {"scene": "live_now", "rev": 2}, asked
    assert "Now" in asked["objects"] and "Ctrl-Z undoes it" in asked["notice"], asked
    assert asked["newer"] == [] and asked["others"] == []  # nothing was followed

    waiting = await blender.send(do="op", name="ask", args={"prompt": "delete Now"})
    assert waiting["run"]["status"] == "awaiting_confirmation", waiting
    approved = await blender.send(do="op", name="approve")
    assert approved["synced"]["rev"] == 3 and "Now" not in approved["objects"], approved

    # A run from another door changes the scene meanwhile: the next asked run is not the
    # revision after the session's, so it waits to be pulled, and nothing is replayed.
    await other_door(gateway_url, "add a cube named Elsewhere at 4 0 0", "live_now")
    skipped = await blender.send(do="op", name="ask", args={"prompt": "add a cube named Later"})
    assert skipped["run"]["status"] == "completed" and skipped["synced"]["rev"] == 3, skipped
    assert not {"Later", "Elsewhere"} & set(skipped["objects"]), skipped["objects"]


async def test_replay_check_when_the_artist_edits_before_the_next_tick_counts_it_as_theirs(
    blender: BlenderSession, gateway_url: str
) -> None:
    await as_ana(blender, gateway_url, "live_check")
    assert (await blender.send(do="op", name="push"))["synced"]["rev"] == 1

    def ran(name: str) -> dict[str, Any]:
        args = {"primitive": "cube", "name": name, "location": [0, 0, 3]}
        made = {"tool": "object.create", "state": "completed", "args": args}
        return {"prompt": f"add {name}", "committed": True, "operations": [made]}

    # Replayed, the session's fingerprint is taken at the next tick: known once it ran.
    came = await blender.send(do="applied", scene="live_check", rev=2, ran=ran("One"))
    assert came["synced"]["rev"] == 2 and not came["digestKnown"] and "One" in came["objects"]
    ticked = await blender.send(do="tick")
    assert ticked["digestKnown"] and ticked["error"] == "", ticked

    # The artist moves an object between the replay and that tick: it stays a change of
    # theirs, so a pull keeps it and offers to push it, rather than taking it for the mesh's.
    await blender.send(do="applied", scene="live_check", rev=3, ran=ran("Two"))
    await blender.send(do="move", name="One")
    ticked = await blender.send(do="tick")
    assert ticked["synced"]["rev"] == 3 and not ticked["digestKnown"], ticked
    pulled = await blender.send(do="op", name="pull")
    assert pulled["changedLocally"] is True and "Two" in pulled["objects"], pulled


async def test_follow_when_a_revision_is_seen_before_its_run_is_recorded_looks_again(
    blender: BlenderSession, gateway_url: str
) -> None:
    # The run of a revision is recorded just after the revision is stored: a look at the
    # scene in between finds the revision without it. It is looked for again, a few times,
    # before the panel gives up and offers a pull.
    await as_ana(blender, gateway_url, "live_unrecorded")
    assert (await blender.send(do="op", name="push"))["synced"]["rev"] == 1
    missing = "revision 2 has no run on record"
    for _ in range(5):
        seen = await blender.send(do="applied", scene="live_unrecorded", stopped=missing)
        assert seen["notice"] == "Pushed as revision 1 of scene live_unrecorded.", seen
    # A run made through another door comes in all the same once it is recorded.
    await other_door(gateway_url, "add a cube named Later at 0 2 0", "live_unrecorded")
    came = await blender.send(do="synced", rev=2)
    assert "Later" in came["objects"] and came["error"] == "", came
    for _ in range(6):
        seen = await blender.send(do="applied", scene="live_unrecorded", stopped=missing)
    assert "cannot be replayed in this session: " + missing in seen["notice"], seen


async def test_replay_when_a_step_fails_leaves_the_session_as_it_was(
    blender: BlenderSession,
) -> None:
    before = await blender.send(do="edit", name="Mine")
    calls = [
        ("object.create", {"primitive": "cube", "name": "A"}),
        ("object.transform", {"name": "Mine", "location": [1, 2, 3]}),
        ("object.rename", {"name": "Nope", "new_name": "B"}),
    ]
    ops = [{"tool": tool, "state": "completed", "args": args} for tool, args in calls]
    failed = await blender.send(do="replay", ran={"prompt": "p", "operations": ops})
    assert failed["failure"] == ["not_found", "object 'Nope' does not exist"], failed
    assert failed["objects"] == before["objects"]  # no half of the run stays
    summary = {
        "revision": 1,
        "moreObjects": 0,
        "objects": [
            {"name": "Mine", "type": "MESH", "location": [0, 0, 1], "rotationDegrees": [0, 0, 0],
             "scale": [1, 1, 1], "materials": []},
            {"name": "Gone", "type": "MESH", "location": [0, 0, 0], "rotationDegrees": [0, 0, 0],
             "scale": [1, 1, 1], "materials": []},
        ],
    }  # fmt: skip
    shown = await blender.send(do="differences", summary=summary)
    wrong = shown["differences"]
    assert "Mine: location (0, 0, 0), the mesh has (0, 0, 1)" in wrong, wrong
    assert "Gone is missing" in wrong and "Cube is not on the mesh" in wrong


async def test_live_edit_when_the_artist_is_in_edit_mode_waits_for_object_mode(
    blender: BlenderSession, gateway_url: str
) -> None:
    await as_ana(blender, gateway_url, "live_mode")
    await blender.send(do="op", name="push")
    editing = await blender.send(do="mode", active="Cube", mode="EDIT")
    assert editing["mode"] == "EDIT_MESH", editing["mode"]
    await other_door(gateway_url, "add a cube named Late at 3 0 0", "live_mode")
    waiting = await blender.send(do="watch", what="newer")
    assert "back in Object Mode" in waiting["notice"] and "Late" not in waiting["objects"]
    assert waiting["synced"]["rev"] == 1
    await blender.send(do="mode", active="Cube", mode="OBJECT")
    came = await blender.send(do="synced", rev=2)
    assert "Late" in came["objects"] and came["error"] == "", came["error"]


async def test_live_edit_when_the_artist_refuses_to_push_first_sends_nothing(
    blender: BlenderSession, gateway_url: str
) -> None:
    await as_ana(blender, gateway_url, "live_refuse")
    await blender.send(do="prefs", url=gateway_url, token="tok-ana", before_ask="REFUSE")
    await blender.send(do="op", name="push")
    await blender.send(do="edit", name="Mine")
    refused = await blender.send(do="op", name="ask", args={"prompt": "add a cube named Box"})
    assert "push your changes first" in refused["error"], refused
    assert refused["synced"]["rev"] == 1 and "Box" not in refused["objects"]
    async with httpx.AsyncClient(base_url=gateway_url) as http:
        history = await http.get(
            "/api/scenes/live_refuse/history", headers={"Authorization": "Bearer tok-ana"}
        )
    assert [r["revision"] for r in history.json()["revisions"]] == [1]  # nothing was sent


async def test_ask_when_objects_are_selected_reads_it_and_the_selected_ones_as_them(
    blender: BlenderSession, gateway_url: str
) -> None:
    await as_ana(blender, gateway_url, "picked")
    assert (await blender.send(do="op", name="push"))["synced"]["rev"] == 1
    await blender.send(do="select", names=["Cube", "Light"], active="Light")
    moved = await blender.send(do="op", name="ask", args={"prompt": "move the selected ones up 1"})
    assert moved["run"]["status"] == "completed", moved
    moved_names = [a["tool"] for a in moved["run"]["actions"]]
    assert moved_names == ["object.transform", "object.transform"], moved["run"]
    waiting = await blender.send(do="op", name="ask", args={"prompt": "delete it"})
    [approval] = waiting["approvals"]
    assert tools(approval) == [("object.delete", {"name": "Light"})]  # the active one
    await blender.send(do="select", names=[], active=None)
    refused = await blender.send(do="op", name="ask", args={"prompt": "delete this"})
    assert "select one in Blender, or name the object" in refused["error"], refused


async def test_pull_when_artist_changed_the_scene_keeps_the_change_and_offers_a_push(
    blender: BlenderSession, gateway_url: str
) -> None:
    await as_ana(blender, gateway_url, "studio")
    await blender.send(do="save", path=str(blender.home / "studio.blend"))
    assert (await blender.send(do="op", name="push"))["synced"]["rev"] == 1
    await other_door(gateway_url, "add a cube named Door at 3 0 0", "studio")
    await blender.send(do="edit", name="ArtistLamp")
    on_disk = (blender.home / "studio.blend").read_bytes()

    refused = await blender.send(do="op", name="pull")
    assert refused["changedLocally"] is True and refused["synced"]["rev"] == 1, refused
    assert "ArtistLamp" in refused["objects"] and "Door" not in refused["objects"]
    assert (blender.home / "studio.blend").read_bytes() == on_disk
    kept = await blender.send(do="op", name="keep")
    assert kept["changedLocally"] is False and "Kept your changes" in kept["notice"]
    assert "ArtistLamp" in kept["objects"]

    # Push first: the scene exists, so the artist's file waits for their approval.
    pushed = await blender.send(do="op", name="push")
    [approval] = pushed["approvals"]
    assert [tool for tool, _ in tools(approval)] == ["scene.import"], pushed
    approved = await blender.send(do="op", name="approve")
    assert approved["synced"] == {"scene": "studio", "rev": 3}, approved
    pulled = await blender.send(do="op", name="pull")
    assert pulled["error"] == "" and "ArtistLamp" in pulled["objects"], pulled
    assert Path(pulled["filepath"]) == blender.home / "studio.blend"
    assert (blender.home / "studio.blend1").read_bytes() == on_disk

    # Or keep a copy of theirs and pull: the copy is written before the session is replaced.
    await other_door(gateway_url, "add a cube named Window at 0 3 0", "studio")
    await blender.send(do="edit", name="ArtistChair")
    pulled = await blender.send(do="op", name="pull", args={"keep_copy": True})
    assert "Window" in pulled["objects"] and "ArtistChair" not in pulled["objects"], pulled
    [mine] = blender.home.glob("studio-mine-*.blend")
    assert mine.name in pulled["notice"] and mine.stat().st_size > 0


async def test_follow_when_another_door_runs_lists_its_revision_and_approval(
    blender: BlenderSession, gateway_url: str
) -> None:
    await as_ana(blender, gateway_url, "hall")
    # Without live edits: the newer revision is listed and pulled (a live session
    # replays it, test_live_edit_...).
    await blender.send(do="prefs", url=gateway_url, token="tok-ana", live=False)
    assert (await blender.send(do="op", name="push"))["synced"]["rev"] == 1
    made = await other_door(gateway_url, "add a cube named Ball at 2 0 0", "hall")
    seen = await blender.send(do="watch", what="newer")
    assert [r["revision"] for r in seen["newer"]] == [2], seen
    assert seen["newer"][0]["runId"] == made["runId"]
    other = next(r for r in seen["others"] if r["runId"] == made["runId"])
    assert other["prompt"] == "add a cube named Ball at 2 0 0"  # the panel shows requests
    # and what a run made without words did: the push is an import, not an id.
    [pushed] = [r for r in seen["others"] if r["runId"] != made["runId"]]
    assert pushed["prompt"] is None and pushed["request"].startswith("import a .blend ("), pushed
    assert seen["user"] == "ana"  # and who the token is
    pulled = await blender.send(do="op", name="pull")
    assert "Ball" in pulled["objects"] and pulled["newer"] == [], pulled

    asked = await other_door(gateway_url, "delete Ball", "hall")
    assert asked["status"] == "awaiting_confirmation"
    seen = await blender.send(do="watch", what="approvals")
    [approval] = seen["approvals"]
    assert approval["runId"] == asked["runId"] and tools(approval) == [
        ("object.delete", {"name": "Ball"})
    ]
    approved = await blender.send(do="op", name="approve")
    assert approved["run"]["runId"] == asked["runId"]
    assert approved["run"]["status"] == "completed", approved


# -- hostile ----------------------------------------------------------------------------


async def test_push_when_token_is_wrong_shows_the_refusal_not_a_traceback(
    blender: BlenderSession, gateway_url: str
) -> None:
    await blender.send(do="prefs", url=gateway_url, token="tok-nobody")
    await blender.send(do="scene", scene="room")
    shown = await blender.send(do="op", name="push")
    assert "refused the token" in shown["error"] and "preferences" in shown["error"]
    assert shown["synced"] is None and shown["busy"] == ""
    assert "Traceback" not in blender.stderr()


async def test_ask_when_gateway_is_down_says_how_to_start_it(
    blender: BlenderSession, unused_tcp_port: int
) -> None:
    down = f"http://127.0.0.1:{unused_tcp_port}"
    await blender.send(do="prefs", url=down, token="tok-ana")
    await blender.send(do="scene", scene="room")
    shown = await blender.send(do="op", name="ask", args={"prompt": "add a cube"})
    assert f"cannot reach the blendmesh gateway at {down}" in shown["error"]
    assert "blendmesh up" in shown["error"] and shown["busy"] == ""
    assert "Traceback" not in blender.stderr()


async def test_pull_when_scene_is_another_users_is_refused_as_unknown(
    blender: BlenderSession, gateway_url: str
) -> None:
    await as_ana(blender, gateway_url, "ben-only")
    await blender.send(do="prefs", url=gateway_url, token="tok-ben")
    await blender.send(do="op", name="push")  # ben's scene now
    await blender.send(do="prefs", url=gateway_url, token="tok-ana")
    shown = await blender.send(do="op", name="pull", args={"keep_copy": True})
    assert "(HTTP 404)" in shown["error"] and "ben-only" in shown["error"], shown
    assert shown["filepath"] == ""  # nothing was opened in place of the session


async def test_operators_when_input_is_bad_name_what_to_fix(
    blender: BlenderSession, gateway_url: str
) -> None:
    await as_ana(blender, gateway_url, "no/such scene")
    shown = await blender.send(do="op", name="push")
    assert "is not 1-128 letters" in shown["error"], shown
    await blender.send(do="scene", scene="room")
    empty = await blender.send(do="op", name="ask", args={"prompt": "   "})
    assert "type a request first" in empty["error"]
    bad_url = await blender.send(do="prefs", url="ftp://x", token="tok-ana")
    assert bad_url["ops"]
    shown = await blender.send(do="op", name="pull")
    assert "is not http(s)://host:port" in shown["error"]
    await asyncio.sleep(0)


async def test_push_when_the_shot_links_libraries_brings_them_and_the_links_resolve(
    blender: BlenderSession, gateway_url: str, tmp_path: Path
) -> None:
    shot = await make_shot(tmp_path / "studio")
    opened_session = await blender.send(do="open", path=str(shot))
    assert "Hero" in opened_session["objects"], opened_session
    await as_ana(blender, gateway_url, "addon_shot")
    pushed = await blender.send(do="op", name="push")
    assert pushed["error"] == "" and pushed["synced"] == {"scene": "addon_shot", "rev": 1}, pushed
    async with httpx.AsyncClient(base_url=gateway_url, timeout=60, headers=ANA) as http:
        stored = await http.get("/api/scenes/addon_shot.blend")
        assert stored.status_code == 200, stored.text
        path = tmp_path / "down" / "addon_shot.blend"
        (tmp_path / "down" / "libraries").mkdir(parents=True)
        path.write_bytes(stored.content)
        links = sorted(library_paths(str(path)))
        assert [link.split("@")[0] for link in links] == [
            "//libraries/characters", "//libraries/props",
        ]  # fmt: skip
        for link in links:  # each library revision the shot names, as a client fetches it
            name = link.removeprefix("//libraries/")
            fetched = await http.get(f"/api/scenes/addon_shot/libraries/{name}")
            assert fetched.status_code == 200, fetched.text
            (path.parent / "libraries" / name).write_bytes(fetched.content)
    found = await opened(path)
    assert not any(missing for _, missing, _ in found["libraries"]), found
    hero = next(o for o in found["objects"] if o[0] == "Hero" and o[2])
    assert hero[3] == HERO_X  # the override the artist made travelled with the shot
    # The session keeps its own paths: a second push sends the same shot again.
    again = await blender.send(do="op", name="push")
    assert again["error"] == "" and again["synced"]["scene"] == "addon_shot", again


async def test_push_when_a_linked_library_is_missing_names_it_and_sends_nothing(
    blender: BlenderSession, gateway_url: str, tmp_path: Path
) -> None:
    shot = await make_shot(tmp_path / "studio")
    (tmp_path / "studio" / "lib" / "props.blend").unlink()
    await blender.send(do="open", path=str(shot))
    await as_ana(blender, gateway_url, "addon_missing")
    pushed = await blender.send(do="op", name="push")
    assert "props.blend" in pushed["error"] and "Find Missing Files" in pushed["error"], pushed
    assert pushed["synced"] is None and pushed["pushedBytes"] == 0, pushed
    async with httpx.AsyncClient(base_url=gateway_url, timeout=60, headers=ANA) as http:
        assert (await http.get("/api/scenes/addon_missing")).status_code == 404
