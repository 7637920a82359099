"""The executor's guarantees (spec 000 §Executor Guarantees 1 and 3) as one behavioural
contract: tests/unit runs it on the in-memory bridge, tests/integration on the real bpy
bridge, so both adapters are held to the same behaviour."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contracts.events import (
    Approved,
    Event,
    OperationRolledBack,
    OperationSkipped,
    OperationStarted,
    OperationSucceeded,
)
from contracts.operations import Operation, OperationSet
from services.executor.runner import PlanRunner
from services.executor.scenes import SceneFiles
from services.runtime.scene_summaries import MemorySceneSummaries


def approved(
    *ops: tuple[str, str, dict[str, Any]], scene: str = "s1", levels: dict[str, str] | None = None
) -> Approved:
    operations = []
    for op_id, tool, args in ops:
        level = (levels or {}).get(op_id) or (
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
        )  # type: ignore[arg-type]
    return Approved(
        event_id=f"ev-{scene}-{len(ops)}",
        at=0.0,
        run_id=f"run-{scene}",
        request_id="req",
        thread_id="t",
        user="u",
        scene_id=scene,
        operation_set=OperationSet(request_id="req", operations=operations),
        schedule=[o.operation_id for o in operations],
        approved_by="policy",
    )


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []

    async def __call__(self, event: Event) -> None:
        self.events.append(event)

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


def runner(bridge: Any, tmp_path: Path, timeout: float = 30.0) -> PlanRunner:
    return PlanRunner(
        bridge=bridge,
        scenes=SceneFiles(tmp_path / "scenes"),
        work_dir=tmp_path / "work",
        op_timeout=timeout,
    )


CUBE = ("op01", "object.create", {"primitive": "cube", "name": "Box", "location": [0, 0, 1]})


class RunnerContract:
    """Subclass with a ``bridge`` fixture."""

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
        assert executed.blend_path and Path(executed.blend_path).exists()
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
