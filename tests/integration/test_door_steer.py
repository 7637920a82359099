"""Re-runs and forks on the bus door, on a real mesh (issue 42, ADR 0063): a request is
the client's ``run.requested`` event with an ``origin``, and the door rewrites its plan
and request id from the original run, which must be the asker's."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from contracts.events import Executed, RunRequested
from services.doors.cli.mesh import Mesh
from services.runtime.nats.history import read_run
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.integration.test_door import PREFIX, User, requested
from tests.support.bus_logins import user_login
from tests.support.meshes import mesh_fixture
from tests.support.signing import register

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    home = tmp_path_factory.mktemp("home")
    return Settings(home=home, prefix=PREFIX, user="alice", previews=False)


mesh = mesh_fixture(client="test-door-steer")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def users(mesh: tuple[Mesh, Bus], mesh_settings: Settings) -> AsyncIterator[dict[str, User]]:
    out: dict[str, User] = {}
    for name in ("alice", "bob"):
        seed = register(mesh_settings.home, name)
        out[name] = User(name, await user_login(mesh[0].url, seed, name))
    try:
        yield out
    finally:
        for user in out.values():
            await user.nc.close()


def create(op_id: str, name: str, deps: list[str] | None = None) -> dict[str, Any]:
    return {"operation_id": op_id, "tool_name": "object.create",
            "args": {"primitive": "cube", "name": name}, "depends_on": deps or [],
            "safety_level": "safe_write"}  # fmt: skip


def move(op_id: str, name: str, deps: list[str]) -> dict[str, Any]:
    return {"operation_id": op_id, "tool_name": "object.transform",
            "args": {"name": name, "location": [1.0, 2.0, 3.0]}, "depends_on": deps,
            "safety_level": "safe_write"}  # fmt: skip


def steer(user: str, scene: str, origin: dict[str, Any], plan: Any = None) -> dict[str, Any]:
    """A re-run or fork as a client sends it: its own ids, the origin, an edit or no plan."""
    event = requested(user, scene, {"request_id": f"req-{uuid.uuid4().hex[:12]}"})
    return {**event, "plan": plan, "origin": origin}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def failed(users: dict[str, User]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    ops = [create("a", "Here"), move("b", "Ghost", ["a"])]
    ended = await users["alice"].run({"request_id": "req-bus", "operations": ops}, "bus_s")
    assert ended["type"] == "run.failed", ended
    return ended, ops


async def test_rerun_on_the_bus_when_failed_completes_and_skips_what_was_committed(
    users: dict[str, User], mesh: tuple[Mesh, Bus], failed: tuple[dict[str, Any], Any]
) -> None:
    original, ops = failed
    edited = {"request_id": "x", "operations": [ops[0], move("b", "Here", ["a"])]}
    origin = {"run": original["run_id"], "kind": "rerun", "from_op": 2}
    event = steer("alice", "bus_s", origin, edited)
    sub = await users["alice"].nc.subscribe(f"{PREFIX}.feed.alice.run.{event['run_id']}.>")
    answer = await users["alice"].ask("run.submit", event)
    assert answer == {"ok": True, "run_id": event["run_id"]}, answer
    while (ended := (await sub.next_msg(timeout=60)).data) and b'"run.completed"' not in ended:
        assert b'"run.failed"' not in ended, ended
    await sub.unsubscribe()
    events = await read_run(mesh[1].js, mesh[1].prefix, event["run_id"])
    request = events[0]
    assert isinstance(request, RunRequested)
    # The door took the original's request id, not the client's.
    assert request.request_id == "req-bus" and request.origin is not None
    assert request.origin.run == original["run_id"] and request.host.transport == "bus"
    executed = [e for e in events if isinstance(e, Executed)][-1]
    assert {r.operation_id: r.status for r in executed.receipts} == {
        "a": "skipped_idempotent", "b": "succeeded"
    }  # fmt: skip


@pytest.mark.parametrize(
    ("who", "origin", "scene", "code", "said"),
    [
        # On a scene of his own, so the answer is about the run, not alice's scene.
        ("bob", {"kind": "rerun", "from_op": 1}, "bob_s", "NOT_FOUND", "no run"),
        ("bob", {"kind": "fork"}, "bob_s", "NOT_FOUND", "no run"),
        ("alice", {"kind": "rerun", "from_op": 3}, "bus_s", "INVALID", "has operations 1 to 2"),
        ("alice", {"kind": "rerun", "from_op": 1}, "elsewhere", "INVALID", "ran on scene bus_s"),
        ("alice", {"kind": "fork"}, "bus_s", "CONFLICT", "no stored revision"),
    ],
)
async def test_steering_on_the_bus_when_refused_says_why(
    users: dict[str, User],
    failed: tuple[dict[str, Any], Any],
    who: str,
    origin: dict[str, Any],
    scene: str,
    code: str,
    said: str,
) -> None:
    event = steer(who, scene, {"run": failed[0]["run_id"], **origin})
    answer = await users[who].ask("run.submit", event)
    assert answer["ok"] is False and answer["error"]["code"] == code, answer
    assert said in answer["error"]["message"]


async def test_steering_on_the_bus_when_origin_is_not_one_run_id_is_invalid(
    users: dict[str, User],
) -> None:
    event = steer("alice", "bus_s", {"run": "run.>", "kind": "rerun"})
    answer = await users["alice"].ask("run.submit", event)
    assert answer["ok"] is False and answer["error"]["code"] == "INVALID", answer
