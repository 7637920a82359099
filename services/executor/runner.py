"""Running an approved schedule against the bridge: spec 000 §Executor Guarantees.

For every operation, in schedule order: the tool call and a fingerprint after it. A
failed mutating operation is rolled back to the state before it (the default
per-operation boundary) and the rollback is verified by hash; if the hash does not come
back, the failure is ROLLBACK_FAILED and the scene is not saved. Operations after a
failure are skipped (spec 002: stop at the first failure).

The state before an operation is a checkpoint plus a redo log: the last checkpoint file
(the saved scene the run started from, then one every ``checkpoint_every`` committed
operations) and the deterministic operations committed since. Restoring loads the file
and replays the log. Writing a .blend before every operation would cost more than the
operations themselves (bench/run_latency.py), and failures are the rare path.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

import msgspec

from contracts.events import (
    Approved,
    Event,
    Executed,
    OperationFailed,
    OperationRolledBack,
    OperationSkipped,
    OperationStarted,
    OperationSucceeded,
    RunEvent,
    follow,
)
from contracts.failures import FailureContract
from contracts.operations import Operation
from contracts.receipts import Receipt, ReceiptStatus
from contracts.scenes import summarize
from services.executor.failures import rollback_failure, tool_failure
from services.executor.ports import Bridge
from services.executor.scenes import SceneFiles
from services.runtime.scene_summaries import SceneSummaries

Emit = Callable[[Event], Awaitable[None]]
_E = TypeVar("_E", bound=RunEvent)


@dataclass
class _Checkpoint:
    """The last consistent state on disk, and what has been committed since."""

    path: Path | None  # None: the empty scene
    since: list[Operation] = field(default_factory=list)


@dataclass
class _Call:
    """One tool invocation of one operation."""

    approved: Approved
    index: int
    op: Operation
    mcp_call_id: str
    before: str  # scene hash before the call
    ms: float = 0.0

    @property
    def mutating(self) -> bool:
        return self.op.safety_level != "read_only"


@dataclass
class _Step:
    receipt: Receipt
    hash_after: str
    failure: FailureContract | None = None
    consistent: bool = True  # False when rollback did not reach the checkpoint


@dataclass
class PlanRunner:
    bridge: Bridge
    scenes: SceneFiles
    work_dir: Path
    op_timeout: float = 60.0
    checkpoint_every: int = 32  # bounds how much a rollback replays
    summaries: SceneSummaries | None = None  # where planners read what a scene holds
    clock: Callable[[], float] = field(default=time.time)
    new_id: Callable[[], str] = field(default=lambda: str(uuid.uuid4()))

    async def run(self, approved: Approved, emit: Emit) -> Executed:
        scene_hash = await self.scenes.open(self.bridge, approved.scene_id)
        saved = self.scenes.path(approved.scene_id)
        self._checkpoint = _Checkpoint(saved if saved.exists() else None)
        self._run_id = approved.run_id
        ops = {op.operation_id: op for op in approved.operation_set.operations}
        receipts: list[Receipt] = []
        failed: _Step | None = None
        failed_id = ""
        for index, op_id in enumerate(approved.schedule):
            op = ops[op_id]
            if failed is not None:
                receipts.append(self._skipped(op))
                await emit(
                    follow(
                        approved,
                        OperationSkipped,
                        self.clock(),
                        index,
                        operation_id=op_id,
                        reason=f"not run: {failed_id} failed",
                    )
                )
                continue
            step = await self._run_op(approved, index, op, scene_hash, emit)
            receipts.append(step.receipt)
            scene_hash = step.hash_after
            if step.failure is not None:
                failed, failed_id = step, op_id
            elif op.safety_level != "read_only":
                await self._committed(op)
        blend_path: str | None = None
        if failed is None or failed.consistent:
            blend_path = str(await self.scenes.commit(self.bridge, approved.scene_id))
            await self._summarize(approved.scene_id)
        message = failed.receipt.message if failed else ""
        return follow(
            approved,
            Executed,
            self.clock(),
            scene_id=approved.scene_id,
            receipts=receipts,
            scene_hash=scene_hash,
            blend_path=blend_path,
            failure=failed.failure if failed else None,
            message=f"{failed_id} ({failed.receipt.tool_name}) failed: {message}" if failed else "",
        )

    async def _summarize(self, scene_id: str) -> None:
        if self.summaries is None:
            return
        snapshot = await self.bridge.call_tool("scene.snapshot", {}, self.new_id())
        if snapshot.get("ok"):
            await self.summaries.put(summarize(scene_id, snapshot["data"]))

    async def _run_op(
        self, approved: Approved, index: int, op: Operation, before: str, emit: Emit
    ) -> _Step:
        call = _Call(approved, index, op, self.new_id(), before)
        await emit(
            self._event(call, OperationStarted, tool_name=op.tool_name, scene_hash_before=before)
        )
        started = time.perf_counter()
        result = await self._invoke(op, call.mcp_call_id)
        call.ms = round((time.perf_counter() - started) * 1000, 3)
        if result.get("ok"):
            return await self._succeeded(call, result, emit)
        return await self._failed(call, result, emit)

    def _event(self, call: _Call, kind: type[_E], **fields: Any) -> _E:
        return follow(
            call.approved,
            kind,
            self.clock(),
            call.index,
            operation_id=call.op.operation_id,
            mcp_call_id=call.mcp_call_id,
            **fields,
        )

    async def _committed(self, op: Operation) -> None:
        self._checkpoint.since.append(op)
        if len(self._checkpoint.since) >= self.checkpoint_every:
            path = self.work_dir / f"{self._run_id}.blend"
            path.parent.mkdir(parents=True, exist_ok=True)
            await self.bridge.save(str(path))
            self._checkpoint = _Checkpoint(path)

    async def _invoke(self, op: Operation, call_id: str) -> dict[str, Any]:
        try:
            return await self.bridge.call_tool(
                op.tool_name, op.args, call_id, timeout=self.op_timeout
            )
        except TimeoutError:
            await self.bridge.restart()
            return {
                "ok": False,
                "error_code": "timeout",
                "mutated": True,
                "message": f"exceeded its {self.op_timeout:g} s budget; the bridge was "
                "restarted and the scene restored",
            }
        except Exception as exc:  # noqa: BLE001 - a dead bridge is an operation failure
            await self.bridge.restart()
            return {
                "ok": False,
                "error_code": "internal_error",
                "mutated": True,
                "message": f"the Blender bridge stopped ({exc}); it was restarted",
            }

    def _receipt(self, call: _Call, status: ReceiptStatus, **fields: Any) -> Receipt:
        return Receipt(
            operation_id=call.op.operation_id,
            tool_name=call.op.tool_name,
            safety_level=call.op.safety_level,
            status=status,
            mcp_call_id=call.mcp_call_id,
            scene_hash_before=call.before,
            duration_ms=call.ms,
            **fields,
        )

    async def _succeeded(self, call: _Call, result: dict[str, Any], emit: Emit) -> _Step:
        after = await self.bridge.fingerprint() if call.mutating else call.before
        mutation_id = self.new_id() if call.mutating else None
        receipt = self._receipt(
            call,
            "succeeded",
            blender_mutation_id=mutation_id,
            scene_hash_after=after,
            result=result.get("data"),
        )
        await emit(
            self._event(call, OperationSucceeded, blender_mutation_id=mutation_id, receipt=receipt)
        )
        return _Step(receipt=receipt, hash_after=after)

    async def _failed(self, call: _Call, result: dict[str, Any], emit: Emit) -> _Step:
        code, message = result.get("error_code"), str(result.get("message", ""))
        contract = tool_failure(call.op.operation_id, call.op.tool_name, code, message)
        receipt = self._receipt(call, "failed", error_code=code, message=message)
        await emit(self._event(call, OperationFailed, receipt=receipt, failure=contract))
        if not call.mutating:
            return _Step(receipt=receipt, hash_after=call.before, failure=contract)
        method, restored = await self._rollback(call.before)
        if restored != call.before:
            bad = rollback_failure(call.op.operation_id, f"hash {restored} != {call.before}")
            return _Step(receipt=receipt, hash_after=restored, failure=bad, consistent=False)
        await emit(self._event(call, OperationRolledBack, method=method, scene_hash=restored))
        rolled = msgspec.structs.replace(receipt, status="rolled_back", scene_hash_after=restored)
        return _Step(receipt=rolled, hash_after=restored, failure=contract)

    async def _rollback(self, before: str) -> tuple[Literal["none", "checkpoint"], str]:
        """Return (method, hash): restore the state before the operation if it changed."""
        try:
            current = await self.bridge.fingerprint()
        except Exception:  # noqa: BLE001 - a dead bridge has lost the scene: restore it
            await self.bridge.restart()
            current = ""
        if current == before:
            return "none", current
        return "checkpoint", await self._restore()

    async def _restore(self) -> str:
        """Load the last checkpoint and replay what was committed since; return the hash."""
        point = self._checkpoint
        try:
            if point.path is None:
                await self.bridge.reset()
            else:
                await self.bridge.load(str(point.path))
            for op in point.since:
                result = await self.bridge.call_tool(
                    op.tool_name, op.args, self.new_id(), timeout=self.op_timeout
                )
                if not result.get("ok"):
                    return f"unrestored (replaying {op.operation_id}: {result.get('message')})"
            return await self.bridge.fingerprint()
        except Exception as exc:  # noqa: BLE001 - reported as ROLLBACK_FAILED
            return f"unrestored ({exc})"

    def _skipped(self, op: Operation) -> Receipt:
        return Receipt(
            operation_id=op.operation_id,
            tool_name=op.tool_name,
            safety_level=op.safety_level,
            status="skipped",
            message="not run: an earlier operation failed",
        )
