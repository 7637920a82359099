"""Render jobs through the bus door on a real mesh (real nats-server, real bpy): alice
renders frames of her scene and reads them back a chunk at a time; bob, asking about her
scene or her job on every render verb, hears NOT_FOUND; what the render contract refuses
answers INVALID in its own words (docs/bus.md, docs/renders.md)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
from typing import Any

import pytest

from services.runtime.service.settings import Settings
from tests.integration.test_door import PREFIX, User, seeds, users
from tests.support.mcp_plans import create
from tests.support.meshes import mesh_fixture

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(300),
]
__all__ = ["seeds", "users"]  # the door's logins, as test_door makes them
TINY = {"engine": "workbench", "samples": 1, "size": "32x32"}


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    home = tmp_path_factory.mktemp("home")
    return Settings(home=home, prefix=PREFIX, user="alice", previews=False)


mesh = mesh_fixture()


async def ended(user: User, job_id: str) -> dict[str, Any]:
    for _ in range(600):
        answer = await user.ask("render.show", {"job_id": job_id})
        assert answer["ok"], answer
        if answer["job"]["status"] in ("completed", "cancelled", "failed"):
            return dict(answer["job"])
        await asyncio.sleep(0.1)
    raise AssertionError(f"job {job_id} did not end")


async def test_door_render_when_alice_asks_renders_and_hands_her_the_frames(
    users: dict[str, User],
) -> None:
    alice, bob = users["alice"], users["bob"]
    made = await alice.run(create("Box"), "doorshot")
    assert made["type"] == "run.completed", made
    asked = await alice.ask("render.submit", {"scene_id": "doorshot", "frames": "1-3", **TINY})
    assert asked["ok"], asked
    job = await ended(alice, asked["job"]["job_id"])
    assert job["status"] == "completed" and [f["frame"] for f in job["frames"]] == [1, 2, 3]
    got = await alice.ask("render.frame", {"job_id": job["job_id"], "frame": 3})
    png = base64.b64decode(got["data"])
    assert got["size"] == len(png) and got.get("next_offset") is None
    assert hashlib.sha256(png).hexdigest() == job["frames"][2]["sha256"]
    for verb, body in [
        ("render.submit", {"scene_id": "doorshot", **TINY}),
        ("render.show", {"job_id": job["job_id"]}),
        ("render.cancel", {"job_id": job["job_id"]}),
        ("render.frame", {"job_id": job["job_id"], "frame": 1}),
    ]:
        answer = await bob.ask(verb, body)
        assert answer["ok"] is False and answer["error"]["code"] == "NOT_FOUND", (verb, answer)
    late = await alice.ask("render.cancel", {"job_id": job["job_id"]})
    assert late["error"]["code"] == "CONFLICT" and "completed already" in late["error"]["message"]


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ({"frames": "1-999999999"}, "past Blender's last frame"),
        ({"frames": "9-1"}, "backwards"),
        ({"size": "100000x100000"}, "width 100000"),
        ({"samples": 0}, "samples 0"),
        ({"engine": "octane"}, "unknown"),
        ({"scene_id": "../etc"}, "scene_id"),
        ({"frames": "1" * 100}, "frames"),
        ({"sneaky": 1}, "unknown field"),
    ],
)
async def test_door_render_when_hostile_input_is_refused_as_invalid(
    users: dict[str, User], body: dict[str, object], said: str
) -> None:
    answer = await users["alice"].ask("render.submit", {"scene_id": "doorshot", **TINY, **body})
    assert answer["ok"] is False and answer["error"]["code"] == "INVALID", answer
    assert said in answer["error"]["message"]


async def test_door_render_when_job_id_is_not_a_token_is_invalid(users: dict[str, User]) -> None:
    answer = await users["alice"].ask("render.show", {"job_id": "a.b.>"})
    assert answer["ok"] is False and answer["error"]["code"] == "INVALID"
