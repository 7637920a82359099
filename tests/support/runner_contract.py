"""The executor's guarantees (spec 000 §Executor Guarantees 1 and 3) as one behavioural
contract: tests/unit runs it on the in-memory bridge, tests/integration on the real bpy
bridge, so both adapters are held to the same behaviour."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

import msgspec
import pytest

from contracts import inspection
from contracts.bridge import BlenderProfile
from contracts.events import (
    Approved,
    Event,
    OperationRolledBack,
    OperationSkipped,
    OperationStarted,
    OperationSucceeded,
    RollbackBoundary,
)
from contracts.operations import Operation, OperationSet, SafetyLevel
from services.executor.adapters.exports import SceneExports
from services.executor.domain.journal import JournalEntry
from services.executor.domain.ports import Lease, LeaseHeld
from services.executor.domain.preview_worker import PREVIEW_SIZE, PreviewWorker
from services.executor.domain.runner import PlanRunner
from services.executor.domain.session import Scenes
from services.executor.memory import (
    MemoryJournal,
    MemoryLeases,
    MemoryPreviews,
    MemorySceneStore,
    MemorySceneSummaries,
)
from tests.support.catalog_fixture import CATALOG

_REQUESTS = itertools.count(1)


def approved(
    *ops: tuple[str, str, dict[str, Any]],
    scene: str = "s1",
    levels: dict[str, SafetyLevel] | None = None,
    request_id: str | None = None,
    run_id: str | None = None,
    boundary: RollbackBoundary = "operation",
) -> Approved:
    """An approved plan; every call is a new request unless ``request_id`` is given."""
    n = next(_REQUESTS)
    request_id = request_id or f"req-{n}"
    operations = []
    for op_id, tool, args in ops:
        level: SafetyLevel = (levels or {}).get(op_id) or (
            "destructive"
            if tool == "object.delete"
            else "read_only"
            if tool == "scene.snapshot"
            else "safe_write"
        )
        operations.append(
            Operation(
                operation_id=op_id, tool_name=tool, args=args, depends_on=[], safety_level=level
            )
        )
    return Approved(
        event_id=f"ev-{n}",
        at=0.0,
        run_id=run_id or f"run-{n}",
        request_id=request_id,
        thread_id="t",
        user="u",
        scene_id=scene,
        operation_set=OperationSet(request_id=request_id, operations=operations),
        schedule=[o.operation_id for o in operations],
        approved_by="policy",
        rollback_boundary=boundary,
    )


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []

    async def __call__(self, event: Event) -> None:
        self.events.append(event)

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


def runner(bridge: Any, tmp_path: Path, timeout: float = 30.0) -> PlanRunner:
    """A runner on in-memory store, leases and journal, shared per test directory."""
    ports = _PORTS.setdefault(
        str(tmp_path), (MemorySceneStore(tmp_path / "store"), MemoryLeases(), MemoryJournal())
    )
    store, leases, journal = ports
    scenes = Scenes(
        store=store,
        leases=leases,
        files=SceneExports(tmp_path / "scenes"),
        work_dir=tmp_path / "work",
        bridge=bridge,
    )
    return PlanRunner(
        bridge=bridge,
        scenes=scenes,
        journal=journal,
        catalog=lambda: CATALOG,
        profile=lambda: PROFILE,
        op_timeout=timeout,
    )


def preview_worker(bridge: Any, run: PlanRunner, previews: MemoryPreviews) -> PreviewWorker:
    """A preview worker rendering on ``bridge`` (the runner's own, in these tests)."""

    async def opened() -> Any:
        return bridge

    return PreviewWorker(opened, run.scenes.files, previews, run.scenes.work_dir / "previews")


_PORTS: dict[str, tuple[MemorySceneStore, MemoryLeases, MemoryJournal]] = {}
PROFILE = BlenderProfile(
    version="5.0.1",
    version_tuple=(5, 0, 1),
    background=True,
    engines=["BLENDER_WORKBENCH", "CYCLES"],
    python="3.11",
    sandbox="none",
)


CUBE = ("op01", "object.create", {"primitive": "cube", "name": "Box", "location": [0, 0, 1]})


class RunnerContract:
    """Subclass with a ``bridge`` fixture."""

    @pytest.mark.clause("000-§execution.3", "000-§execution.4", "000-§execution.5")
    async def test_run_when_all_ops_succeed_chains_hashes_and_saves(
        self, bridge: Any, tmp_path: Path
    ) -> None:
        rec = Recorder()
        plan = approved(
            CUBE,
            ("op02", "modifier.add", {"object": "Box", "type": "BEVEL"}),
            ("op03", "scene.snapshot", {}),
        )
        executed = await runner(bridge, tmp_path).run(plan, rec)
        assert executed.failure is None
        assert [r.status for r in executed.receipts] == ["succeeded"] * 3
        r1, r2, r3 = executed.receipts
        assert (
            r1.scene_hash_after == r2.scene_hash_before
            and r1.scene_hash_after != r1.scene_hash_before
        )
        assert r3.scene_hash_before == r3.scene_hash_after  # read-only
        assert r3.blender_mutation_id is None and r1.blender_mutation_id and r2.blender_mutation_id
        assert len({r.mcp_call_id for r in executed.receipts}) == 3
        assert executed.blend_path
        assert await asyncio.to_thread(Path(executed.blend_path).exists)
        assert len(rec.of(OperationStarted)) == 3 and len(rec.of(OperationSucceeded)) == 3

    async def test_run_when_committed_publishes_scene_summary(
        self, bridge: Any, tmp_path: Path
    ) -> None:
        summaries = MemorySceneSummaries()
        run = runner(bridge, tmp_path)
        run.summaries = summaries
        executed = await run.run(approved(CUBE), Recorder())
        summary = summaries.items["s1"]
        assert [o.name for o in summary.objects] == ["Box"]
        assert summary.objects[0].location == [0.0, 0.0, 1.0]
        assert summary.scene_hash == executed.scene_hash

    async def test_run_when_committed_stores_inspection_of_the_revision(
        self, bridge: Any, tmp_path: Path
    ) -> None:
        plan = approved(CUBE, ("op02", "modifier.add", {"object": "Box", "type": "BEVEL"}))
        executed = await runner(bridge, tmp_path).run(plan, Recorder())
        store = _PORTS[str(tmp_path)][0]
        assert executed.revision == store.heads["s1"].revision == 1
        assert executed.inspection is not None
        data = await store.read_inspection(executed.inspection)
        assert data is not None
        doc = inspection.decode(data)
        assert (doc.scene_id, doc.revision, doc.scene_hash) == ("s1", 1, executed.scene_hash)
        assert [o.name for o in doc.objects] == ["Box"]
        assert doc.objects[0].location == [0.0, 0.0, 1.0]
        assert [m.type for m in doc.objects[0].modifiers] == ["BEVEL"]
        assert doc.run is not None
        assert (doc.run.run_id, doc.run.user, doc.run.approved_by) == (plan.run_id, "u", "policy")
        assert [(o.operation_id, o.tool_name) for o in doc.run.operations] == [
            ("op01", "object.create"),
            ("op02", "modifier.add"),
        ]
        assert doc.run.operations[0].args == CUBE[2] and doc.run.python_steps == []

    async def test_run_when_nothing_committed_reuses_the_head_inspection(
        self, bridge: Any, tmp_path: Path
    ) -> None:
        first = await runner(bridge, tmp_path).run(approved(CUBE), Recorder())
        read = await runner(bridge, tmp_path).run(
            approved(("op01", "scene.snapshot", {})), Recorder()
        )
        assert read.failure is None and read.inspection is not None
        assert (read.revision, read.inspection) == (first.revision, first.inspection)
        ghost = ("op01", "object.transform", {"name": "Ghost", "location": [1, 1, 1]})
        failed = await runner(bridge, tmp_path).run(approved(ghost), Recorder())
        assert failed.failure is not None
        assert (failed.revision, failed.inspection) == (first.revision, first.inspection)

    async def test_run_when_head_has_no_inspection_reports_its_revision_alone(
        self, bridge: Any, tmp_path: Path
    ) -> None:
        first = await runner(bridge, tmp_path).run(approved(CUBE), Recorder())
        assert first.inspection is not None
        store = _PORTS[str(tmp_path)][0]
        (store.root / first.inspection).unlink()  # a revision from before artifacts existed
        read = await runner(bridge, tmp_path).run(
            approved(("op01", "scene.snapshot", {})), Recorder()
        )
        assert (read.revision, read.inspection) == (1, None)

    async def test_inspection_when_same_plan_runs_on_two_scenes_is_identical(
        self, bridge: Any, tmp_path: Path
    ) -> None:
        plan = [
            CUBE,
            ("op02", "modifier.add", {"object": "Box", "type": "BEVEL"}),
            ("op03", "object.transform", {"name": "Box", "location": [0.1, 0.2, 0.3]}),
        ]
        store = _PORTS.setdefault(
            str(tmp_path), (MemorySceneStore(tmp_path / "store"), MemoryLeases(), MemoryJournal())
        )[0]
        docs = []
        for scene in ("a", "b"):
            executed = await runner(bridge, tmp_path).run(approved(*plan, scene=scene), Recorder())
            assert executed.inspection is not None
            data = await store.read_inspection(executed.inspection)
            assert data is not None
            docs.append(inspection.decode(data))
        a, b = docs
        scene = [
            msgspec.json.encode(
                inspection.SceneInspection(
                    blender_version=d.blender_version,
                    objects=d.objects,
                    node_groups=d.node_groups,
                    materials=d.materials,
                ),
                order="sorted",
            )
            for d in docs
        ]
        assert scene[0] == scene[1]
        assert a.run is not None and b.run is not None and a.run.run_id != b.run.run_id
        same = msgspec.structs.replace(b, scene_id=a.scene_id, run=a.run)
        assert inspection.encode(same) == inspection.encode(a)  # hash and revision too

    async def test_run_when_committed_renders_preview_png(
        self, bridge: Any, tmp_path: Path
    ) -> None:
        previews = MemoryPreviews()
        run = runner(bridge, tmp_path)
        run.preview_worker = preview_worker(bridge, run, previews)
        executed = await run.run(approved(CUBE), Recorder())
        assert previews.items == {}  # the result does not wait for the picture
        assert executed.renders_preview  # but says one comes, for the doors that show it
        await run.preview(executed)
        await run.preview_worker.idle()
        png = previews.items["s1"]
        width, height = PREVIEW_SIZE
        assert png.startswith(b"\x89PNG")
        assert png[16:24] == width.to_bytes(4, "big") + height.to_bytes(4, "big")
        assert executed.blend_path is not None
        assert Path(executed.blend_path).with_suffix(".png").read_bytes() == png
        assert await bridge.fingerprint() == executed.scene_hash

    async def test_run_when_previews_are_off_renders_nothing(
        self, bridge: Any, tmp_path: Path
    ) -> None:
        run = runner(bridge, tmp_path)  # no preview worker: BLENDMESH_PREVIEWS=0
        executed = await run.run(approved(CUBE), Recorder())
        await run.preview(executed)
        assert executed.failure is None and executed.blend_path
        assert executed.renders_preview is False  # no door waits for a picture
        assert not Path(executed.blend_path).with_suffix(".png").exists()

    async def test_run_when_preview_render_fails_still_completes(
        self, bridge: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        async def broken(path: str, width: int = 320, height: int = 240) -> dict[str, Any]:
            raise RuntimeError("no GPU and no CPU today")

        monkeypatch.setattr(bridge, "render_preview", broken)
        previews = MemoryPreviews()
        run = runner(bridge, tmp_path)
        run.preview_worker = preview_worker(bridge, run, previews)
        executed = await run.run(approved(CUBE), Recorder())
        await run.preview(executed)
        await run.preview_worker.idle()
        assert executed.failure is None and executed.blend_path
        assert previews.items == {}
        assert not Path(executed.blend_path).with_suffix(".png").exists()

    @pytest.mark.clause("000-§executor-guarantees.13", "004-§multi-step.2")
    async def test_run_when_op_fails_without_change_reports_and_skips_rest(
        self, bridge: Any, tmp_path: Path
    ) -> None:
        rec = Recorder()
        plan = approved(
            CUBE,
            ("op02", "object.transform", {"name": "Ghost", "location": [1, 1, 1]}),
            ("op03", "object.create", {"primitive": "cube", "name": "Late"}),
        )
        executed = await runner(bridge, tmp_path).run(plan, rec)
        assert executed.failure is not None
        assert executed.failure.error_code == "TOOL_ERROR"
        assert executed.failure.minimal_repair_plan[0].operation_id == "op02"
        assert [r.status for r in executed.receipts] == ["succeeded", "rolled_back", "skipped"]
        failed = executed.receipts[1]
        assert failed.scene_hash_after == failed.scene_hash_before == executed.scene_hash
        assert rec.of(OperationRolledBack)[0].method == "none"
        assert rec.of(OperationSkipped)[0].operation_id == "op03"
        assert executed.blend_path is not None  # op01 committed: the per-operation boundary

    @pytest.mark.clause(
        "000-§executor-guarantees.9", "000-§executor-guarantees.11", "000-§executor-guarantees.13"
    )
    async def test_run_when_op_mutates_then_fails_restores_checkpoint(
        self, bridge: Any, tmp_path: Path
    ) -> None:
        rec = Recorder()
        plan = approved(
            CUBE,
            (
                "op02",
                "modifier.add",
                {"object": "Box", "type": "BEVEL", "properties": {"segments": "lots"}},
            ),
        )
        executed = await runner(bridge, tmp_path).run(plan, rec)
        assert executed.failure is not None and executed.failure.error_code == "ARGS_INVALID"
        failed = executed.receipts[1]
        assert failed.status == "rolled_back"
        assert rec.of(OperationRolledBack)[0].method == "checkpoint"
        assert (
            executed.scene_hash == failed.scene_hash_before == executed.receipts[0].scene_hash_after
        )

    async def test_run_when_scene_was_saved_continues_from_it(
        self, bridge: Any, tmp_path: Path
    ) -> None:
        first = await runner(bridge, tmp_path).run(approved(CUBE), Recorder())
        await bridge.reset()
        second = await runner(bridge, tmp_path).run(
            approved(("op01", "object.transform", {"name": "Box", "location": [2, 0, 0]})),
            Recorder(),
        )
        assert second.failure is None
        assert second.receipts[0].scene_hash_before == first.scene_hash

    @pytest.mark.clause("000-§failure-contract.5", "001-§timeouts.1")
    async def test_run_when_tool_times_out_restarts_bridge_and_restores(
        self, bridge: Any, tmp_path: Path
    ) -> None:
        await runner(bridge, tmp_path).run(approved(CUBE), Recorder())
        rec = Recorder()
        plan = approved(("op01", "object.create", {"primitive": "monkey", "name": "Slow"}))
        executed = await runner(bridge, tmp_path, timeout=0.000001).run(plan, rec)
        assert executed.failure is not None and executed.failure.error_code == "TOOL_TIMEOUT"
        assert executed.receipts[0].status == "rolled_back"
        assert rec.of(OperationRolledBack)[0].method == "checkpoint"
        assert executed.scene_hash == executed.receipts[0].scene_hash_before
        assert bridge.restarts == 1

    @pytest.mark.clause(
        "000-§executor-guarantees.5", "000-§executor-guarantees.6", "000-§executor-guarantees.8"
    )
    async def test_resubmitted_plan_when_committed_skips_everything(
        self, bridge: Any, tmp_path: Path
    ) -> None:
        plan = [CUBE, ("op02", "modifier.add", {"object": "Box", "type": "BEVEL"})]
        first = await runner(bridge, tmp_path).run(approved(*plan, request_id="same"), Recorder())
        again = await runner(bridge, tmp_path).run(approved(*plan, request_id="same"), Recorder())
        assert again.failure is None
        assert [r.status for r in again.receipts] == ["skipped_idempotent"] * 2
        assert again.scene_hash == first.scene_hash
        assert [r.blender_mutation_id for r in again.receipts] == [
            r.blender_mutation_id for r in first.receipts
        ]

    @pytest.mark.clause("000-§executor-guarantees.6", "000-§executor-guarantees.8")
    async def test_redelivered_run_when_committed_reports_same_receipts(
        self, bridge: Any, tmp_path: Path
    ) -> None:
        plan = approved(CUBE, request_id="redo", run_id="run-redo")
        first = await runner(bridge, tmp_path).run(plan, Recorder())
        rec = Recorder()
        again = await runner(bridge, tmp_path).run(plan, rec)
        assert [r.status for r in again.receipts] == ["succeeded"]
        assert again.receipts == first.receipts and again.scene_hash == first.scene_hash
        assert rec.of(OperationStarted) == []  # nothing ran twice

    @pytest.mark.clause("000-§executor-guarantees.7", "000-§failure-contract.6")
    async def test_same_request_when_args_differ_is_conflict_and_runs_nothing(
        self, bridge: Any, tmp_path: Path
    ) -> None:
        first = await runner(bridge, tmp_path).run(approved(CUBE, request_id="r1"), Recorder())
        other = ("op01", "object.create", {"primitive": "cube", "name": "Other"})
        rec = Recorder()
        result = await runner(bridge, tmp_path).run(approved(other, request_id="r1"), rec)
        assert result.failure is not None and result.failure.error_code == "IDEMPOTENCY_CONFLICT"
        assert "other args" in result.failure.retry_hint
        assert rec.of(OperationStarted) == [] and result.scene_hash == first.scene_hash
        assert [r.status for r in result.receipts] == ["skipped"]

    @pytest.mark.clause("000-§executor-guarantees.7")
    async def test_resubmitted_plan_when_scene_changed_since_is_conflict(
        self, bridge: Any, tmp_path: Path
    ) -> None:
        await runner(bridge, tmp_path).run(approved(CUBE, request_id="r1"), Recorder())
        move = ("op01", "object.transform", {"name": "Box", "location": [5, 5, 5]})
        await runner(bridge, tmp_path).run(approved(move, request_id="r2"), Recorder())
        result = await runner(bridge, tmp_path).run(approved(CUBE, request_id="r1"), Recorder())
        assert result.failure is not None and result.failure.error_code == "IDEMPOTENCY_CONFLICT"
        assert "scene changed" in result.failure.retry_hint

    @pytest.mark.clause("000-§executor-guarantees.8")
    async def test_redelivered_run_when_revision_was_lost_replays_journal(
        self, bridge: Any, tmp_path: Path
    ) -> None:
        """An executor died after journaling its operations but before committing the
        revision: the next delivery rebuilds the same scene from the journal."""
        start = await runner(bridge, tmp_path).run(approved(CUBE), Recorder())
        store = _PORTS[str(tmp_path)][0]
        before = store.heads["s1"]
        plan = approved(
            ("op01", "object.create", {"primitive": "cone", "name": "Tip"}),
            ("op02", "modifier.add", {"object": "Tip", "type": "BEVEL"}),
            request_id="lost",
            run_id="run-lost",
        )
        full = await runner(bridge, tmp_path).run(plan, Recorder())
        store.heads["s1"] = before  # the revision never made it
        await bridge.reset()
        again = await runner(bridge, tmp_path).run(plan, Recorder())
        assert again.failure is None and again.scene_hash == full.scene_hash
        assert again.scene_hash != start.scene_hash
        assert [r.status for r in again.receipts] == ["succeeded", "succeeded"]

    @pytest.mark.clause("000-§executor-guarantees.9", "000-§executor-guarantees.13")
    async def test_run_boundary_when_op_fails_undoes_the_whole_run(
        self, bridge: Any, tmp_path: Path
    ) -> None:
        start = await runner(bridge, tmp_path).run(approved(CUBE), Recorder())
        rec = Recorder()
        plan = approved(
            ("op01", "object.create", {"primitive": "cube", "name": "A"}),
            ("op02", "object.transform", {"name": "Box", "location": [1, 1, 1]}),
            ("op03", "object.transform", {"name": "Ghost", "location": [1, 1, 1]}),
            boundary="run",
            request_id="whole",
        )
        result = await runner(bridge, tmp_path).run(plan, rec)
        assert result.failure is not None and "rolled back" in result.message
        assert result.scene_hash == start.scene_hash
        assert [r.status for r in result.receipts] == ["rolled_back"] * 3
        assert {e.operation_id for e in rec.of(OperationRolledBack)} == {"op01", "op02", "op03"}
        retry = await runner(bridge, tmp_path).run(
            approved(
                ("op01", "object.create", {"primitive": "cube", "name": "A"}), request_id="whole"
            ),
            Recorder(),
        )
        assert [r.status for r in retry.receipts] == ["succeeded"]  # the journal forgot op01

    @pytest.mark.clause("001-§capability-gate.3", "001-§error-codes.3")
    async def test_capability_gate_when_blender_too_old_runs_nothing(
        self, bridge: Any, tmp_path: Path
    ) -> None:
        run = runner(bridge, tmp_path)
        run.profile = lambda: msgspec.structs.replace(PROFILE, version_tuple=(4, 1, 0))
        rec = Recorder()
        result = await run.run(approved(CUBE), rec)
        assert result.failure is not None and result.failure.error_code == "CAPABILITY_MISSING"
        assert "needs Blender 4.2.0" in result.failure.retry_hint
        assert rec.events == [] and result.blend_path is None

    async def test_lease_when_scene_held_by_another_executor_refuses(
        self, bridge: Any, tmp_path: Path
    ) -> None:
        run = runner(bridge, tmp_path)
        leases = _PORTS[str(tmp_path)][1]
        leases.held["s1"] = Lease(scene_id="s1", owner="other", epoch=3, expires_at=1e12)
        with pytest.raises(LeaseHeld):
            await run.run(approved(CUBE), Recorder())

    async def test_success_when_journal_write_is_slow_is_announced_after_it_in_order(
        self, bridge: Any, tmp_path: Path
    ) -> None:
        """The next operation runs while an entry is written, but no success is announced
        before its entry is stored, and the log reads in the order things happened."""
        run = runner(bridge, tmp_path)
        journal = SlowJournal()
        run.journal = journal
        seen: list[tuple[str, str]] = []
        call_tool = bridge.call_tool
        calls = 0

        async def counted(*args: Any, **kwargs: Any) -> Any:
            nonlocal calls
            calls += 1
            # A tool runs before the entries of the operations before it are all stored.
            journal.overlapped |= len(journal.stored) < calls - 1
            return await call_tool(*args, **kwargs)

        async def record(event: Event) -> None:
            if isinstance(event, OperationSucceeded):
                assert event.operation_id in journal.stored, "announced before its entry"
            seen.append((type(event).__name__, getattr(event, "operation_id", "")))

        plan = approved(
            CUBE,
            ("op02", "object.transform", {"name": "Box", "location": [1, 2, 3]}),
            ("op03", "modifier.add", {"object": "Box", "type": "BEVEL"}),
        )
        bridge.call_tool = counted
        try:
            executed = await run.run(plan, record)
        finally:
            del bridge.call_tool  # the class's own method again
        assert executed.failure is None
        assert seen == [
            (kind, op)
            for op in ("op01", "op02", "op03")
            for kind in ("OperationStarted", "OperationSucceeded")
        ]
        assert journal.overlapped, "the next tool waited for the journal's write"

    async def test_run_when_journal_write_fails_announces_and_commits_nothing_after(
        self, bridge: Any, tmp_path: Path
    ) -> None:
        """A journal that refuses an entry fails the run before its revision: the message is
        delivered again and the run resumes from what the journal holds."""
        start = await runner(bridge, tmp_path).run(approved(CUBE), Recorder())
        store = _PORTS[str(tmp_path)][0]
        before = store.heads["s1"]
        run = runner(bridge, tmp_path)
        journal = SlowJournal(fail_on="op02")
        run.journal = journal
        rec = Recorder()
        plan = approved(
            ("op01", "object.transform", {"name": "Box", "location": [4, 4, 4]}),
            ("op02", "object.transform", {"name": "Box", "location": [5, 5, 5]}),
            ("op03", "object.transform", {"name": "Box", "location": [6, 6, 6]}),
        )
        with pytest.raises(OSError, match="journal unavailable"):
            await run.run(plan, rec)
        # The three entries were stored as one group (ordered.py): none of its successes
        # is announced when its write fails, though a store that is not atomic kept op01.
        assert [e.operation_id for e in rec.of(OperationSucceeded)] == []
        assert store.heads["s1"] == before and start.revision == before.revision
        # op03 ran, but its entry was never written: the journal holds a prefix of the
        # schedule, so the run resumes from op02 when its message comes again.
        assert journal.stored == {"op01"}


class SlowJournal(MemoryJournal):
    """A journal whose writes take a while (or fail for one operation)."""

    def __init__(self, fail_on: str | None = None) -> None:
        super().__init__()
        self.stored: set[str] = set()
        self.writing = 0
        self.overlapped = False
        self._fail_on = fail_on

    async def put(self, key: str, entry: JournalEntry) -> None:
        assert self.writing == 0, "a journal entry was written before the one before it"
        self.writing += 1
        try:
            await asyncio.sleep(0.02)
            if entry.operation_id == self._fail_on:
                raise OSError("journal unavailable")
            await super().put(key, entry)
            self.stored.add(entry.operation_id)
        finally:
            self.writing -= 1
