"""The bus door on a real mesh (real nats-server, real bpy): what a user's own login may
ask, and what it is refused. alice and bob log in with their NKeys; carol is an approver.
Something not the asker's answers exactly like something unknown (docs/adr/0015)."""

from __future__ import annotations

import asyncio
import base64
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from nats.aio.client import Client
from nats.aio.msg import Msg

from contracts import subjects
from contracts.door import run_prefix
from services.doors.cli.mesh import Mesh
from services.runtime.nats.history import read_run
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.bus_logins import user_login
from tests.support.mcp_plans import create, delete
from tests.support.meshes import mesh_fixture, role_bus
from tests.support.signing import register

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

PREFIX = "bmdoor"


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    home = tmp_path_factory.mktemp("home")
    # No picture is looked at here: a Blender rendering every commit would only compete
    # with the runs for the CPU, and a stop would wait for its last render.
    return Settings(home=home, prefix=PREFIX, user="alice", previews=False)


mesh = mesh_fixture()


@pytest.fixture(scope="module")
def seeds(mesh_settings: Settings) -> dict[str, bytes]:
    home = mesh_settings.home
    return {
        "alice": register(home, "alice"),
        "bob": register(home, "bob"),
        "carol": register(home, "carol", approver=True),
    }


class User:
    def __init__(self, name: str, nc: Client) -> None:
        self.name = name
        self.nc = nc

    async def ask(self, verb: str, body: Any, reply_to: str | None = None) -> dict[str, Any]:
        subject = subjects.door_api(PREFIX, self.name, verb)
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        reply = await self.nc.request(subject, data, timeout=10)
        answer: dict[str, Any] = json.loads(reply.data)
        return answer

    async def run(self, plan: dict[str, Any], scene: str, **fields: Any) -> dict[str, Any]:
        """Submit ``plan`` and wait on the feed until the run ends or waits for a person."""
        request = requested(self.name, scene, plan, **fields)
        sub = await self.nc.subscribe(subjects.feed(PREFIX, self.name, request["run_id"]))
        try:
            answer = await self.ask("run.submit", request)
            assert answer == {"ok": True, "run_id": request["run_id"]}, answer
            while True:
                event = json.loads((await sub.next_msg(timeout=60)).data)
                if event["type"] in ("run.completed", "run.failed", "run.approval_requested"):
                    return event
        finally:
            await sub.unsubscribe()


def requested(user: str, scene: str, plan: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {
        "type": "run.requested",
        "event_id": str(uuid.uuid4()),
        "at": time.time(),
        "run_id": f"{run_prefix(user)}-{uuid.uuid4().hex[:16]}",
        "request_id": plan["request_id"],
        "thread_id": f"thread-{uuid.uuid4().hex[:16]}",
        "user": user,
        "scene_id": scene,
        "plan": plan,
        "planner": "plan",
        **fields,
    }


def resolution(waiting: dict[str, Any], by: str, decision: str = "approve_once") -> dict[str, Any]:
    return {
        "type": "run.approval_resolved",
        "event_id": str(uuid.uuid4()),
        "at": time.time(),
        "run_id": waiting["run_id"],
        "request_id": waiting["request_id"],
        "thread_id": waiting["thread_id"],
        "user": waiting["user"],
        "causation_id": waiting["event_id"],
        "approval_id": waiting["approval_id"],
        "decision": decision,
        "resolved_by": by,
        "request_hash": waiting["request_hash"],
    }


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def users(mesh: tuple[Mesh, Bus], seeds: dict[str, bytes]) -> AsyncIterator[dict[str, User]]:
    running, _ = mesh
    out: dict[str, User] = {}
    for name, seed in seeds.items():
        out[name] = User(name, await user_login(running.url, seed, name))
    try:
        yield out
    finally:
        for user in out.values():
            await user.nc.close()


async def test_door_when_a_user_runs_a_plan_follows_it_on_the_feed_to_completion(
    users: dict[str, User],
) -> None:
    alice = users["alice"]
    done = await alice.run(create("DoorCube"), "doorscene")
    assert done["type"] == "run.completed" and done["user"] == "alice", done
    events = await alice.ask("run.events", {"run_id": done["run_id"]})
    assert events["ok"] and events["events"][0]["type"] == "run.requested"
    assert events["events"][-1]["event_id"] == done["event_id"]
    listed = await alice.ask("runs.list", {"limit": 5})
    assert done["run_id"] in [r["run_id"] for r in listed["runs"]]
    assert all("blend_path" not in r for r in listed["runs"])  # no host path for a user
    scenes = await alice.ask("scenes.list", {})
    assert [s["scene_id"] for s in scenes["scenes"]] == ["doorscene"]


async def test_door_when_asked_for_another_users_run_or_scene_answers_as_if_unknown(
    users: dict[str, User],
) -> None:
    alice, bob = users["alice"], users["bob"]
    done = await alice.run(create("DoorPrivate"), "doorprivate")
    for verb in ("run.events", "run.audit"):
        theirs = await bob.ask(verb, {"run_id": done["run_id"]})
        unknown = await bob.ask(verb, {"run_id": "run-nobody-has"})
        assert theirs["error"]["code"] == unknown["error"]["code"] == "NOT_FOUND"
        assert theirs["error"]["message"] == f"no run {done['run_id']}"
    taken = await bob.ask("run.submit", requested("bob", "doorprivate", create("BobCube")))
    assert taken["error"] == {"code": "NOT_FOUND", "message": "no scene doorprivate"}
    assert (await bob.ask("scenes.list", {}))["scenes"] == []
    thread = await bob.ask(
        "run.submit", requested("bob", "bobscene", create("B"), thread_id=done["thread_id"])
    )
    assert thread["error"]["code"] == "NOT_FOUND" and "thread" in thread["error"]["message"]


async def test_door_when_bob_submits_alices_run_id_answers_as_for_one_nobody_has(
    users: dict[str, User],
) -> None:
    alice, bob = users["alice"], users["bob"]
    done = await alice.run(create("AliceOnly"), "alicerunid")
    taken = await bob.ask(
        "run.submit", {**requested("bob", "bobs", create("B")), "run_id": done["run_id"]}
    )
    free = await bob.ask(
        "run.submit",
        {**requested("bob", "bobs", create("B")), "run_id": f"{run_prefix('alice')}-free"},
    )
    assert taken["error"]["code"] == free["error"]["code"] == "INVALID"
    expected = f"run ids from this login begin with {run_prefix('bob')}-"
    assert taken["error"]["message"] == free["error"]["message"]
    assert taken["error"]["message"].startswith(expected)


async def test_door_when_a_request_names_another_user_is_refused_and_nothing_runs(
    users: dict[str, User], mesh: tuple[Mesh, Bus]
) -> None:
    _, bus = mesh
    forged = requested("alice", "bobforged", create("Forged"))
    answer = await users["bob"].ask("run.submit", forged)
    assert answer["error"]["code"] == "FORBIDDEN"
    assert "names user 'alice'" in answer["error"]["message"]
    assert await read_run(bus.js, PREFIX, forged["run_id"]) == []
    mine = requested("bob", "bobown", create("BobOwn"))
    assert (await users["bob"].ask("run.submit", mine))["ok"]
    again = await users["bob"].ask("run.submit", mine)  # a run id is used once
    assert again["error"]["code"] == "CONFLICT"


async def test_door_when_bob_resolves_alices_approval_is_refused_and_she_still_may(
    users: dict[str, User],
) -> None:
    alice, bob, carol = users["alice"], users["bob"], users["carol"]
    await alice.run(create("DoorDoomed"), "doordelete")
    waiting = await alice.run(delete("DoorDoomed"), "doordelete")
    assert waiting["type"] == "run.approval_requested", waiting
    hijack = await bob.ask("run.resolve", resolution(waiting, "bob"))
    assert hijack["error"] == {"code": "NOT_FOUND", "message": f"no run {waiting['run_id']}"}
    claimed = await bob.ask("run.resolve", resolution(waiting, "alice"))
    assert claimed["error"]["code"] == "FORBIDDEN"
    # An approver may resolve anyone's; the run goes on as approved by them.
    sub = await alice.nc.subscribe(subjects.feed(PREFIX, "alice", waiting["run_id"], "completed"))
    try:
        assert (await carol.ask("run.resolve", resolution(waiting, "carol")))["ok"]
        done = json.loads((await sub.next_msg(timeout=60)).data)
    finally:
        await sub.unsubscribe()
    assert done["type"] == "run.completed"
    events = (await alice.ask("run.events", {"run_id": waiting["run_id"]}))["events"]
    approved = [e for e in events if e["type"] == "run.approved"]
    assert [e["approved_by"] for e in approved][-1] == "carol"


async def test_door_when_resolved_with_the_spec_alias_always_allows_under_its_own_name(
    users: dict[str, User],
) -> None:
    """002 §7 names the decision ``approve_and_always_allow_recipient``: the bus door takes
    it, the log carries blendmesh's name, and the same operation then runs unasked."""
    alice = users["alice"]
    await alice.run(create("AliasA"), "dooralias")
    waiting = await alice.run(delete("AliasA"), "dooralias")
    assert waiting["type"] == "run.approval_requested", waiting
    sub = await alice.nc.subscribe(subjects.feed(PREFIX, "alice", waiting["run_id"], "completed"))
    try:
        answer = await alice.ask(
            "run.resolve", resolution(waiting, "alice", "approve_and_always_allow_recipient")
        )
        assert answer["ok"], answer
        await sub.next_msg(timeout=60)
    finally:
        await sub.unsubscribe()
    events = (await alice.ask("run.events", {"run_id": waiting["run_id"]}))["events"]
    [resolved] = [e for e in events if e["type"] == "run.approval_resolved"]
    assert resolved["decision"] == "approve_and_always_allow"
    await alice.run(create("AliasB"), "dooralias")
    again = await alice.run(delete("AliasB"), "dooralias")
    assert again["type"] == "run.completed", again


async def test_door_when_the_reply_subject_is_not_the_askers_inbox_answers_nobody(
    users: dict[str, User], mesh: tuple[Mesh, Bus]
) -> None:
    running, _ = mesh
    heard: list[str] = []

    async def hear(msg: Msg) -> None:
        heard.append(msg.subject)

    async with role_bus(running, "policy") as policy:
        await policy.nc.subscribe(f"{PREFIX}.query.>", cb=hear)
        await policy.nc.flush()
        alice = users["alice"]
        for reply in (subjects.query(PREFIX, "allowlist.revoke"), "_INBOX.u.bob.x"):
            await alice.nc.publish(
                subjects.door_api(PREFIX, "alice", "runs.list"), b"{}", reply=reply
            )
        await alice.nc.flush()
        await asyncio.sleep(1.0)
    assert heard == []


@pytest.mark.parametrize(
    ("verb", "body", "code", "words"),
    [
        ("run.events", b"not json", "INVALID", "run_id"),
        ("run.events", {"run_id": "*"}, "INVALID", "run_id"),
        ("run.events", {"run_id": "a", "surprise": 1}, "INVALID", "surprise"),
        ("runs.list", {"limit": 10_000}, "INVALID", "limit"),
        ("run.delete", {}, "NOT_FOUND", "run.submit"),
        ("run.submit", {"type": "run.planned"}, "INVALID", "run.requested"),
        ("run.resolve", {"type": "run.requested"}, "INVALID", "run.approval_resolved"),
    ],
)
async def test_door_when_a_request_is_malformed_says_what_and_changes_nothing(
    users: dict[str, User], verb: str, body: Any, code: str, words: str
) -> None:
    answer = await users["alice"].ask(verb, body)
    assert answer["ok"] is False and answer["error"]["code"] == code
    assert words in answer["error"]["message"]


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"prompt": "x" * 900_000, "plan": None}, "the prompt has 900,000 characters"),
        ({"request_id": "r" * 200_000}, "request_id must be 1 to 128 characters"),
        ({"event_id": ""}, "event_id must be 1 to 128 characters"),
        ({"run_id": "run-" + "x" * 200}, "run_id must be 1 to 128 letters"),
        ({"at": 1e300}, "'at' is more than a day from the door's clock"),
        ({"at": -1e300}, "'at' is more than a day from the door's clock"),
    ],
)
async def test_door_when_a_request_is_over_the_gateways_limits_refuses_it_and_logs_nothing(
    users: dict[str, User], mesh: tuple[Mesh, Bus], fields: dict[str, Any], words: str
) -> None:
    body = {**requested("alice", "doorlimits", create("Limited")), **fields}
    answer = await users["alice"].ask("run.submit", body)
    assert answer["ok"] is False and answer["error"]["code"] == "INVALID", answer
    assert words in answer["error"]["message"]
    if len(body["run_id"]) <= 128:
        assert await read_run(mesh[1].js, PREFIX, body["run_id"]) == []
    assert (await users["alice"].ask("runs.list", {}))["ok"] is True


async def test_door_when_the_server_reloads_its_users_still_answers_what_is_under_way(
    users: dict[str, User], mesh: tuple[Mesh, Bus], mesh_settings: Settings
) -> None:
    # Adding or suspending a user reloads the server's users, and a reload once made it
    # forget that the door may answer the requests it had delivered: their askers waited
    # for answers that the server refused (Publish Violation).
    bob, server = users["bob"], mesh[0]._server
    assert server is not None
    body = {"data": base64.b64encode(b"s" * 300_000).decode()}
    for round_ in range(5):
        asked = [asyncio.ensure_future(bob.ask("files.stage", body)) for _ in range(8)]
        await asyncio.sleep(0.005 * round_)  # some asked, some under way, some answered
        register(mesh_settings.home, f"newcomer{round_}")
        reloaded = await server.reload_users()
        # The mesh's own watcher may have found the newcomer first and reloaded then.
        assert reloaded or server.admits(f"newcomer{round_}")
        answers = await asyncio.gather(*asked)
        assert all(a["ok"] for a in answers), [a for a in answers if not a["ok"]][:2]


async def test_door_scene_changes_when_asked_by_owner_approver_and_stranger_answers_each_its_own(
    users: dict[str, User],
) -> None:
    alice, bob, carol = users["alice"], users["bob"], users["carol"]
    assert (await alice.run(create("First"), "reviewed"))["type"] == "run.completed"
    assert (await alice.run(create("Second"), "reviewed"))["type"] == "run.completed"

    listed = await alice.ask("scenes.changes", {"scene_id": "reviewed"})
    assert listed["ok"], listed
    changes = listed["changes"]
    assert (changes["base"], changes["revision"]) == (1, 2)
    assert [(c["kind"], c["action"]) for c in changes["changes"]] == [
        ("object", "added"),
        ("data", "added"),  # the new cube's mesh
    ]
    assert changes["changes"][0]["name"] == "Second"
    reviewed = await carol.ask(
        "scenes.review",
        {"scene_id": "reviewed", "revision": 2, "verdict": "approve", "note": "good"},
    )
    assert reviewed["ok"] and reviewed["review"]["reviewer"] == "carol", reviewed
    again = await alice.ask("scenes.changes", {"scene_id": "reviewed", "revision": 2})
    assert [(r["reviewer"], r["verdict"]) for r in again["changes"]["reviews"]] == [
        ("carol", "approve")
    ]

    # bob is neither the owner nor an approver: the scene is unknown to him.
    theirs = await bob.ask("scenes.changes", {"scene_id": "reviewed"})
    unknown = await bob.ask("scenes.changes", {"scene_id": "never-made"})
    assert theirs["error"]["code"] == unknown["error"]["code"] == "NOT_FOUND"
    refused = await bob.ask(
        "scenes.review", {"scene_id": "reviewed", "revision": 1, "verdict": "approve"}
    )
    assert refused["error"]["code"] == "NOT_FOUND"
    for body, code in (
        ({"scene_id": "reviewed", "revision": 9}, "NOT_FOUND"),
        ({"scene_id": "reviewed", "revision": -1}, "INVALID"),
        ({"scene_id": "reviewed", "revision": "2"}, "INVALID"),
        ({"scene_id": "reviewed", "base": 2**40}, "INVALID"),
        ({"scene_id": "../x"}, "INVALID"),
    ):
        answer = await alice.ask("scenes.changes", body)
        assert answer["error"]["code"] == code, (body, answer)
    long_note = {"scene_id": "reviewed", "revision": 2, "verdict": "approve", "note": "n" * 2001}
    assert (await alice.ask("scenes.review", long_note))["error"]["code"] == "INVALID"
    bad = {"scene_id": "reviewed", "revision": 2, "verdict": "merge"}
    assert (await alice.ask("scenes.review", bad))["error"]["code"] == "INVALID"
    after = await alice.ask("scenes.changes", {"scene_id": "reviewed", "revision": 2})
    assert len(after["changes"]["reviews"]) == 1  # nothing refused was recorded
