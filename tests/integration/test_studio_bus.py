"""Projects, roles and locks through the bus door on a real mesh (real nats-server, real
bpy), each person logged in with its own NKey: each role gets what the policy says, a
non-member is answered NOT_FOUND, and a lock names its holder (docs/bus.md §4)."""

from __future__ import annotations

import asyncio
import base64
import json
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from nats.aio.client import Client

from contracts import subjects
from contracts.door import run_prefix
from contracts.libraries import project_of, publish_plan
from contracts.scene_files import import_plan
from services.bridge.blendfiles.references import library_paths
from services.doors.cli.mesh import Mesh
from services.doors.core import shot_files
from services.executor.client import LibraryFiles, SceneFiles
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.bus_logins import user_login
from tests.support.mcp_plans import create, delete
from tests.support.meshes import mesh_fixture
from tests.support.shot_files import make_shot
from tests.support.signing import register

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

PREFIX = "bmstbus"
PEOPLE = ("lea", "ben", "vic", "zed")  # lead, artist, viewer, outsider


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    home = tmp_path_factory.mktemp("home")
    return Settings(home=home, prefix=PREFIX, user="lea", previews=False)


mesh = mesh_fixture(client="test-studio-bus")


class Login:
    def __init__(self, name: str, nc: Client) -> None:
        self.name = name
        self.nc = nc

    async def ask(self, verb: str, body: Any) -> dict[str, Any]:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        reply = await self.nc.request(subjects.door_api(PREFIX, self.name, verb), data, timeout=10)
        answer: dict[str, Any] = json.loads(reply.data)
        return answer

    async def run(self, plan: dict[str, Any], scene: str) -> dict[str, Any]:
        """Submit ``plan``: the door's refusal, or the event the run ends or waits with."""
        run_id = f"{run_prefix(self.name)}-{uuid.uuid4().hex[:16]}"
        request = {
            "type": "run.requested", "event_id": str(uuid.uuid4()), "at": time.time(),
            "run_id": run_id, "request_id": plan["request_id"],
            "thread_id": f"thread-{uuid.uuid4().hex[:16]}", "user": self.name,
            "scene_id": scene, "plan": plan, "planner": "plan",
        }  # fmt: skip
        sub = await self.nc.subscribe(subjects.feed(PREFIX, self.name, run_id))
        try:
            answer = await self.ask("run.submit", request)
            if not answer["ok"]:
                return answer
            while True:
                event = json.loads((await sub.next_msg(timeout=60)).data)
                if event["type"] in ("run.completed", "run.failed", "run.approval_requested"):
                    return event
        finally:
            await sub.unsubscribe()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def people(
    mesh: tuple[Mesh, Bus], mesh_settings: Settings
) -> AsyncIterator[dict[str, Login]]:
    seeds = {name: register(mesh_settings.home, name) for name in PEOPLE}
    out: dict[str, Login] = {}
    for name, seed in seeds.items():
        out[name] = Login(name, await user_login(mesh[0].url, seed, name))
    lea = out["lea"]
    assert (await lea.run(create("Hero"), "bus_shot"))["type"] == "run.completed"
    assert (await out["zed"].run(create("Zed"), "bus_zed"))["type"] == "run.completed"
    assert (await lea.ask("projects.create", {"project_id": "busshot"}))["ok"]
    for member, role in (("ben", "artist"), ("vic", "viewer")):
        body = {"project_id": "busshot", "member": member, "role": role}
        assert (await lea.ask("projects.member", body))["ok"]
    filed = await lea.ask("projects.file", {"project_id": "busshot", "scene_id": "bus_shot"})
    assert filed["project"]["scenes"] == ["bus_shot"], filed
    try:
        yield out
    finally:
        for login in out.values():
            await login.nc.close()


async def test_members_when_listing_see_their_roles_and_the_projects_scene(
    people: dict[str, Login],
) -> None:
    for who, role in (("lea", "lead"), ("ben", "artist"), ("vic", "viewer")):
        listed = await people[who].ask("projects.list", {})
        assert [(p["project_id"], p["role"]) for p in listed["projects"]] == [("busshot", role)]
        scenes = await people[who].ask("scenes.list", {"limit": 10})
        assert "bus_shot" in [s["scene_id"] for s in scenes["scenes"]]


async def test_non_member_when_naming_the_project_or_scene_is_answered_not_found(
    people: dict[str, Login],
) -> None:
    zed = people["zed"]
    assert (await zed.ask("projects.list", {}))["projects"] == []
    for verb, body in (
        ("projects.show", {"project_id": "busshot"}),
        ("projects.member", {"project_id": "busshot", "member": "zed", "role": "lead"}),
        ("locks.take", {"scene_id": "bus_shot"}),
        ("locks.break", {"scene_id": "bus_shot"}),
    ):
        answer = await zed.ask(verb, body)
        assert answer["error"]["code"] == "NOT_FOUND", (verb, answer)
    refused = await zed.run(create("Intruder"), "bus_shot")
    assert refused["error"] == {"code": "NOT_FOUND", "message": "no scene bus_shot"}
    ben_on_zeds = await people["ben"].run(create("Stray"), "bus_zed")
    assert ben_on_zeds["error"]["code"] == "NOT_FOUND"


async def test_roles_when_running_get_what_the_policy_says(people: dict[str, Login]) -> None:
    viewer = await people["vic"].run(create("Peek"), "bus_shot")
    assert viewer["error"]["code"] == "FORBIDDEN" and "viewer" in viewer["error"]["message"]
    assert (await people["ben"].run(create("Prop"), "bus_shot"))["type"] == "run.completed"
    waiting = await people["ben"].run(delete("Prop"), "bus_shot")
    assert waiting["type"] == "run.approval_requested" and waiting["lead_of"] == "busshot"
    answer = {
        "type": "run.approval_resolved", "event_id": str(uuid.uuid4()), "at": time.time(),
        "run_id": waiting["run_id"], "request_id": waiting["request_id"],
        "thread_id": waiting["thread_id"], "user": "ben", "causation_id": waiting["event_id"],
        "approval_id": waiting["approval_id"], "decision": "approve_once",
        "request_hash": waiting["request_hash"],
    }  # fmt: skip
    own = await people["ben"].ask("run.resolve", {**answer, "resolved_by": "ben"})
    assert own["error"]["code"] == "FORBIDDEN" and "waits for a lead" in own["error"]["message"]
    by_viewer = await people["vic"].ask("run.resolve", {**answer, "resolved_by": "vic"})
    assert by_viewer["error"]["code"] == "NOT_FOUND"
    lea = people["lea"]
    sub = await lea.nc.subscribe(subjects.feed(PREFIX, "lea", waiting["run_id"]))
    try:
        assert (await lea.ask("run.resolve", {**answer, "resolved_by": "lea"}))["ok"]
    finally:
        await sub.unsubscribe()  # lea hears nothing of ben's run: the feed is ben's alone
    events = await people["ben"].ask("run.events", {"run_id": waiting["run_id"]})
    for _ in range(100):
        if events["events"][-1]["type"] in ("run.completed", "run.failed"):
            break
        await asyncio.sleep(0.3)
        events = await people["ben"].ask("run.events", {"run_id": waiting["run_id"]})
    kinds = [e["type"] for e in events["events"]]
    assert kinds[-1] == "run.completed" and "run.approved" in kinds
    approved = next(e for e in events["events"] if e["type"] == "run.approved")
    assert approved["approved_by"] == "lea"


async def test_lock_when_held_refuses_another_members_run_naming_the_holder(
    people: dict[str, Login],
) -> None:
    ben, lea = people["ben"], people["lea"]
    taken = await ben.ask("locks.take", {"scene_id": "bus_shot", "note": "anim"})
    assert taken["ok"] and taken["lock"]["holder"] == "ben", taken
    blocked = await lea.run(create("Blocked"), "bus_shot")
    assert blocked["error"]["code"] == "CONFLICT" and "locked by ben" in blocked["error"]["message"]
    assert (await people["vic"].ask("locks.break", {"scene_id": "bus_shot"}))["error"]["code"] == (
        "FORBIDDEN"
    )
    broke = await lea.ask("locks.break", {"scene_id": "bus_shot", "note": "review"})
    assert broke["ok"] and broke["lock"]["holder"] == "ben"
    assert (await lea.run(create("Free"), "bus_shot"))["type"] == "run.completed"


async def test_hostile_bodies_when_sent_are_refused_as_invalid(people: dict[str, Login]) -> None:
    lea = people["lea"]
    for verb, body in (
        ("projects.create", {"project_id": "a.>"}),
        ("projects.create", {"project_id": "x" * 65}),
        ("projects.member", {"project_id": "busshot", "member": "ben", "role": "owner"}),
        ("projects.member", {"project_id": "busshot", "member": "", "role": "artist"}),
        ("locks.take", {"scene_id": "bus_shot", "ttl_seconds": 10**9}),
        ("locks.take", {"scene_id": "bus_shot", "note": "n" * 201}),
        ("locks.take", {"scene_id": "../../etc"}),
        ("locks.take", b"not json"),
        ("projects.show", {"project_id": "busshot", "user": "zed"}),
    ):
        answer = await lea.ask(verb, body)
        assert answer["error"]["code"] == "INVALID", (verb, body, answer)


async def test_publish_over_the_bus_when_a_plan_names_a_staged_library_links_its_next_revision(
    people: dict[str, Login], mesh: tuple[Mesh, Bus], tmp_path: Path
) -> None:
    lea = people["lea"]

    async def stage(path: Path) -> tuple[str, int]:
        data = await asyncio.to_thread(path.read_bytes)
        answer = await lea.ask("files.stage", {"data": base64.b64encode(data).decode()})
        assert answer["ok"], answer
        return answer["blob"], answer["size"]

    shot = await asyncio.to_thread(shot_files.gather, await make_shot(tmp_path / "first"))
    try:
        blob, size = await stage(shot.file)
        brought = {name: await stage(path) for name, path in sorted(shot.libraries.items())}
    finally:
        shot.close()
    made = await lea.run(import_plan("req-bus-shot", blob, size, brought), "bus_pubshot")
    assert made["type"] == "run.completed", made
    await make_shot(tmp_path / "newer")  # the library saved again by its artist
    newer = tmp_path / "newer" / "lib" / "Characters.blend"
    blob, size = await stage(newer)
    waiting = await lea.run(publish_plan("req-bus-pub", "characters", blob, size), "bus_pubshot")
    assert waiting["type"] == "run.approval_requested", waiting  # destructive: a person
    theirs = publish_plan("req-zed-pub", "characters", blob, size)
    stray = await people["zed"].run(theirs, "bus_pubshot")
    assert stray["error"] == {"code": "NOT_FOUND", "message": "no scene bus_pubshot"}
    answer = {
        "type": "run.approval_resolved", "event_id": str(uuid.uuid4()), "at": time.time(),
        "run_id": waiting["run_id"], "request_id": waiting["request_id"],
        "thread_id": waiting["thread_id"], "user": "lea", "causation_id": waiting["event_id"],
        "approval_id": waiting["approval_id"], "decision": "approve_once",
        "request_hash": waiting["request_hash"], "resolved_by": "lea",
    }  # fmt: skip
    assert (await lea.ask("run.resolve", answer))["ok"]
    for _ in range(200):
        events = (await lea.ask("run.events", {"run_id": waiting["run_id"]}))["events"]
        if events[-1]["type"] in ("run.completed", "run.failed"):
            break
        await asyncio.sleep(0.3)
    assert events[-1]["type"] == "run.completed", events[-1]
    files = SceneFiles(mesh[1].js, PREFIX)
    head = await files.head("bus_pubshot")
    assert head is not None and head.revision == 2
    stored = tmp_path / "stored.blend"
    await asyncio.to_thread(stored.write_bytes, await files.blend(head))
    [characters] = [p for p in library_paths(str(stored)) if p.startswith("//libraries/char")]
    name, revision = characters.removeprefix("//libraries/").removesuffix(".blend").split("@")
    published = tmp_path / "published.blend"
    assert await LibraryFiles(mesh[1].js, PREFIX).fetch(
        project_of("lea"), name, int(revision), published
    )
    assert await asyncio.to_thread(published.read_bytes) == await asyncio.to_thread(
        newer.read_bytes
    )
