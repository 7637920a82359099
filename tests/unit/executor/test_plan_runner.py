"""The executor's guarantees on the in-memory bridge (see tests/support/runner_contract.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from services.executor.domain.ports import LeaseLost, StaleCommit
from services.executor.memory import MemoryLeases, MemorySceneStore, MemorySceneSummaries
from tests.support.fake_bridge import FakeBridge
from tests.support.runner_contract import CUBE, Recorder, RunnerContract, approved, runner


class TestPlanRunnerOnFakeBridge(RunnerContract):
    @pytest.fixture
    def bridge(self) -> FakeBridge:
        return FakeBridge()


class StaleStore(MemorySceneStore):
    """Another executor committed the scene while this run was storing its revision."""

    async def commit(self, *args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(0.01)  # the bridge describes the scene meanwhile
        raise StaleCommit("scene s1 was committed by another executor since revision 1")


class LostAtCommit(MemoryLeases):
    """The lease expired and another executor took it: the renewal before the commit,
    made while Blender writes the file, finds it gone."""

    async def renew(self, lease: Any) -> Any:
        await asyncio.sleep(0.01)
        raise LeaseLost("the lease on scene s1 is held by another executor")


class TestLostCommit:
    """Run on the in-memory bridge only: the ports, not Blender, are under test."""

    async def test_run_when_commit_is_stale_reports_lease_lost_and_the_bridge_stays_usable(
        self, tmp_path: Path
    ) -> None:
        bridge = FakeBridge()
        first = await runner(bridge, tmp_path).run(approved(CUBE), Recorder())
        run = runner(bridge, tmp_path)
        summaries = MemorySceneSummaries()
        run.summaries = summaries
        run.scenes.store = StaleStore(tmp_path / "store")
        # A run that changes something: only a change is committed (a failed run on a
        # scene with no revision has nothing to commit at all).
        lost = await run.run(approved(CUBE), Recorder())
        assert lost.failure is not None and lost.failure.error_code == "LEASE_LOST"
        assert (lost.blend_path, lost.revision, lost.inspection) == (None, None, None)
        assert summaries.items == {}  # nothing described of a revision that does not exist
        move = ("op01", "object.transform", {"name": "Box", "location": [3, 3, 3]})
        again = await runner(bridge, tmp_path).run(approved(move), Recorder())
        assert again.failure is None and again.revision == (first.revision or 0) + 1

    async def test_run_when_the_lease_is_lost_at_commit_stores_nothing(
        self, tmp_path: Path
    ) -> None:
        bridge = FakeBridge()
        first = await runner(bridge, tmp_path).run(approved(CUBE), Recorder())
        run = runner(bridge, tmp_path)
        store = run.scenes.store
        run.scenes.leases = LostAtCommit()
        move = ("op01", "object.transform", {"name": "Box", "location": [3, 3, 3]})
        lost = await run.run(approved(move), Recorder())
        assert lost.failure is not None and lost.failure.error_code == "LEASE_LOST"
        assert (lost.blend_path, lost.revision) == (None, None)
        assert (await store.head("s1")).revision == first.revision  # type: ignore[union-attr]
        again = await runner(bridge, tmp_path).run(approved(move), Recorder())
        assert again.failure is None and again.revision == (first.revision or 0) + 1


class TestOpenSessions:
    """While a run holds its scene, the executor's bridge must not be stopped for idling
    (ADR 0033): the scenes count the sessions open, and a run always closes its own."""

    async def test_run_when_under_way_counts_its_session_and_when_done_none(
        self, tmp_path: Path
    ) -> None:
        seen: list[int] = []
        run = runner(FakeBridge(), tmp_path)
        bridge = run.scenes.bridge
        original = bridge.call_tool

        async def counting(*args: Any, **kwargs: Any) -> Any:
            seen.append(run.scenes.open_sessions)
            return await original(*args, **kwargs)

        bridge.call_tool = counting  # type: ignore[method-assign]
        done = await run.run(approved(CUBE), Recorder())
        assert done.failure is None and seen and set(seen) == {1}
        assert run.scenes.open_sessions == 0

    async def test_run_when_it_fails_at_commit_still_closes_its_session(
        self, tmp_path: Path
    ) -> None:
        run = runner(FakeBridge(), tmp_path)
        run.scenes.leases = LostAtCommit()
        lost = await run.run(approved(CUBE), Recorder())
        assert lost.failure is not None and lost.failure.error_code == "LEASE_LOST"
        assert run.scenes.open_sessions == 0


class ReplacedBetweenCalls(FakeBridge):
    """The bridge's process dies between two calls and the supervisor's watcher starts a
    new one, with an empty scene, before the run's call to create ``name`` reaches it."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name, self.replaced = name, False

    async def call_tool(self, name: str, arguments: dict[str, Any], *args: Any, **kw: Any) -> Any:
        if arguments.get("name") == self.name and not self.replaced:
            self.replaced = True
            await self.restart()
        return await super().call_tool(name, arguments, *args, **kw)


class TestBridgeReplaced:
    async def test_run_when_bridge_replaced_between_calls_fails_that_operation_and_restores(
        self, tmp_path: Path
    ) -> None:
        bridge = ReplacedBetweenCalls("Cone")
        first = await runner(bridge, tmp_path).run(approved(CUBE), Recorder())
        cone = (
            "op02",
            "object.create",
            {"primitive": "cone", "name": "Cone", "location": [1, 0, 0]},
        )
        ball = ("op03", "object.create", {"primitive": "uv_sphere", "name": "Ball"})
        move = ("op01", "object.transform", {"name": "Box", "location": [3, 3, 3]})
        executed = await runner(bridge, tmp_path).run(approved(move, cone, ball), Recorder())
        assert executed.failure is not None
        assert [r.status for r in executed.receipts] == ["succeeded", "rolled_back", "skipped"]
        assert "stopped during the run" in (executed.receipts[1].message or "")
        # The new process holds the head revision again with op01 replayed, and that is
        # what is committed: Box moved, no Cone, nothing of the new process's empty scene.
        assert executed.scene_hash == executed.receipts[0].scene_hash_after
        assert set(bridge.scene) == {"Box"} and bridge.scene["Box"]["location"] == [3, 3, 3]
        assert executed.revision == (first.revision or 0) + 1
        again = await runner(bridge, tmp_path).run(approved(cone), Recorder())
        assert again.failure is None and set(bridge.scene) == {"Box", "Cone"}


class TestFlushBeforeCommit:
    """The run's events are handed on to be stored once its operations are over, so they
    are written while the revision is committed rather than after it."""

    async def test_run_when_its_operations_are_over_flushes_its_events_before_the_commit(
        self, tmp_path: Path
    ) -> None:
        run = runner(FakeBridge(), tmp_path)
        recorder = Recorder()
        flushed: list[tuple[int, int | None]] = []  # (events emitted, head revision) then

        def flush() -> None:
            head = run.scenes.store.heads.get("s1")  # type: ignore[attr-defined]
            flushed.append((len(recorder.events), head.revision if head else None))

        done = await run.run(approved(CUBE), recorder, flush=flush)
        assert done.failure is None and done.revision == 1
        # Once, with every operation event emitted and no revision committed yet.
        assert flushed == [(len(recorder.events), None)]
        assert {type(e).__name__ for e in recorder.events} >= {"OperationSucceeded"}
