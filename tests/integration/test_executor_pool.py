"""One executor with a pool of two Blender bridges (ADR 0070), on a real mesh and real
Blenders: two users' runs on their own scenes go on at once, two runs on one scene still
go one after the other, and a bridge that dies mid-run fails that run alone, cleanly."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from contracts.events import AnyEvent, OperationStarted, OperationSucceeded
from contracts.receipts import RunResult
from services.doors.cli.mesh import Mesh
from services.doors.core.client import MeshClient
from services.doors.core.requests import build_request
from services.executor.adapters.supervisor import SupervisedBridge
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings

pytestmark = pytest.mark.timeout(300)

PREFIX = "bmpool"
MOVES = 60  # long enough that two runs started together are under way together


def moves(name: str, count: int = MOVES) -> dict[str, Any]:
    """Create ``name``, then move it ``count`` times."""
    ops: list[dict[str, Any]] = [
        {
            "operation_id": "op0000",
            "tool_name": "object.create",
            "args": {"primitive": "cube", "name": name},
            "depends_on": [],
            "safety_level": "safe_write",
        }
    ]
    for i in range(1, count + 1):
        ops.append(
            {
                "operation_id": f"op{i:04d}",
                "tool_name": "object.transform",
                "args": {"name": name, "location": [i * 0.25, i % 5, 0.0]},
                "depends_on": [f"op{i - 1:04d}"],
                "safety_level": "safe_write",
            }
        )
    return {"request_id": f"{name}-{uuid.uuid4().hex[:8]}", "operations": ops}


class Span:
    """When a run's operations started and ended, from its own events' ``at``."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def hear(self, event: AnyEvent) -> None:
        if isinstance(event, OperationStarted | OperationSucceeded):
            self.times.append(event.at)

    @property
    def first(self) -> float:
        return min(self.times)

    @property
    def last(self) -> float:
        return max(self.times)


@contextlib.asynccontextmanager
async def pool_mesh(tmp_path: Path, bridges: int = 2) -> AsyncIterator[MeshClient]:
    settings = Settings(
        home=tmp_path / "home", prefix=PREFIX, user="ana", previews=False, bridges=bridges
    )
    async with Mesh(settings) as mesh:
        bus = await Bus.open(mesh.url, PREFIX, "test", mesh.login("client"))
        try:
            yield MeshClient(bus)
        finally:
            await bus.close()


async def run(
    client: MeshClient, user: str, scene: str, plan: dict[str, Any], span: Span | None = None
) -> RunResult:
    request = build_request(user=user, scene_id=scene, plan=plan)
    return await client.run(request, on_event=span.hear if span else None, timeout=180)


def bridge_pids() -> list[int]:
    """The run bridges' Blender processes this test process started (the preview's runs
    at a lower priority; previews are off here in any case)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if b"services.bridge" in cmdline and ppid == os.getpid():
            pids.append(int(entry.name))
    return pids


async def test_pool_when_two_users_run_on_their_own_scenes_runs_them_at_once(
    tmp_path: Path,
) -> None:
    async with pool_mesh(tmp_path) as client:
        assert len(bridge_pids()) == 1  # the spare starts when a run first needs it
        # A first pair starts the spare Blender (seconds on a busy machine, longer than
        # a run); the pair measured then finds both Blenders running.
        warmed = await asyncio.gather(
            run(client, "ana", "ana-scene", moves("A0", 1)),
            run(client, "bo", "bo-scene", moves("B0", 1)),
        )
        assert [r.status for r in warmed] == ["completed", "completed"]
        assert len(bridge_pids()) == 2
        spans = Span(), Span()
        results = await asyncio.gather(
            run(client, "ana", "ana-scene", moves("A"), spans[0]),
            run(client, "bo", "bo-scene", moves("B"), spans[1]),
        )
        assert [r.status for r in results] == ["completed", "completed"], [
            r.message for r in results
        ]
        assert all(len(s.times) == 2 * (MOVES + 1) for s in spans)
        # Each run's operations began before the other's had ended: they overlapped.
        assert spans[0].first < spans[1].last and spans[1].first < spans[0].last, (
            spans[0].first,
            spans[0].last,
            spans[1].first,
            spans[1].last,
        )
        assert len(bridge_pids()) == 2


async def test_pool_when_two_runs_share_a_scene_runs_them_one_after_the_other(
    tmp_path: Path,
) -> None:
    async with pool_mesh(tmp_path) as client:
        spans = Span(), Span()
        results = await asyncio.gather(
            run(client, "ana", "shared", moves("A"), spans[0]),
            run(client, "ana", "shared", moves("B"), spans[1]),
        )
        assert [r.status for r in results] == ["completed", "completed"], [
            r.message for r in results
        ]
        earlier, later = sorted(range(2), key=lambda i: spans[i].first)
        assert spans[earlier].last <= spans[later].first  # never both under way
        # The later run began on the scene the earlier one left: nothing was lost.
        assert results[later].receipts[0].scene_hash_before == results[earlier].scene_hash


async def test_pool_when_a_bridge_dies_mid_run_fails_that_run_and_serves_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    killed: list[int] = []
    call_tool = SupervisedBridge.call_tool

    async def kill_once(self: SupervisedBridge, name: str, arguments: Any, *a: Any) -> Any:
        # Killed just before the doomed run's last operation: that call meets a dead
        # Blender or a fresh empty one, and the run must fail, not commit half a scene.
        if arguments.get("name") == "Late" and not killed:
            pid = self.pid
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        return await call_tool(self, name, arguments, *a)

    monkeypatch.setattr(SupervisedBridge, "call_tool", kill_once)
    async with pool_mesh(tmp_path) as client:
        doomed = moves("Victim")
        late = {"primitive": "cube", "name": "Late"}
        doomed["operations"].append(
            {**doomed["operations"][0], "operation_id": "late", "args": late, "depends_on": []}
        )
        spans = Span(), Span()
        failed, other = await asyncio.gather(
            run(client, "ana", "doomed", doomed, spans[0]),
            run(client, "bo", "fine", moves("B"), spans[1]),
        )
        assert len(killed) == 1 and killed[0] not in bridge_pids()
        assert other.status == "completed", other.message  # the other lane ran on
        assert failed.status == "failed" and failed.failure is not None
        assert set(msgspec.to_builtins(failed.failure)) == {
            "error_code",
            "recoverable",
            "retry_hint",
            "minimal_repair_plan",
        }
        # The operation that met the dead Blender is rolled back to the scene the run
        # reports, and the next run starts from exactly that scene.
        rolled = next(r for r in failed.receipts if r.status == "rolled_back")
        assert rolled.scene_hash_after == rolled.scene_hash_before == failed.scene_hash
        # Both scenes take runs again: the dead Blender was replaced.
        again = await asyncio.gather(
            run(client, "ana", "doomed", moves("Again", 2)),
            run(client, "bo", "fine", moves("More", 2)),
        )
        assert [r.status for r in again] == ["completed", "completed"], [r.message for r in again]
        assert again[0].receipts[0].scene_hash_before == failed.scene_hash
        assert again[1].receipts[0].scene_hash_before == other.scene_hash
        assert len(bridge_pids()) == 2
