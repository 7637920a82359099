"""One operation at a time: call the tool, journal what committed, restore what failed."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

import msgspec

from contracts.bridge import Compensation, ToolResult
from contracts.events import (
    Approved,
    OperationFailed,
    OperationRolledBack,
    OperationStarted,
    OperationSucceeded,
    RunEvent,
    follow,
)
from contracts.failures import FailureContract
from contracts.operations import Operation
from contracts.python_approvals import PYTHON_TOOLS
from contracts.python_steps import KILL_GRACE_MS, SCENE_IO_MS
from contracts.receipts import Receipt, ReceiptStatus
from contracts.tools import DeterminismClass
from services.executor.domain.failures import rollback_failure, tool_failure, unfinished
from services.executor.domain.journal import JournalEntry, args_digest, op_key
from services.executor.domain.ordered import OrderedEvents
from services.executor.domain.ports import Bridge, Journal
from services.executor.domain.results import ResultImages, repeatable
from services.executor.domain.session import SceneSession
from services.runtime.service.log_context import correlated

log = logging.getLogger("blendmesh.executor")

SANDBOX_START_S = 60.0  # the longest a sandboxed Blender may take to start
_E = TypeVar("_E", bound=RunEvent)


@dataclass
class Step:
    """The outcome of one operation."""

    op_id: str
    receipt: Receipt
    hash_after: str
    failure: FailureContract | None = None
    consistent: bool = True  # False when rollback did not reach the consistency point
    message: str = ""
    compensation: Compensation | None = None
    index: int = 0


@dataclass
class _Call:
    index: int
    op: Operation
    mcp_call_id: str
    before: str
    ms: float = 0.0

    @property
    def mutating(self) -> bool:
        return self.op.safety_level != "read_only"


@dataclass
class OperationRunner:
    bridge: Bridge
    journal: Journal
    approved: Approved
    session: SceneSession
    events: OrderedEvents  # in order; a success only once its journal entry is stored
    op_timeout: float
    clock: Callable[[], float]
    new_id: Callable[[], str]
    since: list[Operation] = field(default_factory=list)  # committed after the checkpoint
    images: ResultImages | None = None  # where results that cannot be replayed are kept
    # The catalog's class of a tool, for receipts of calls that never answered with one.
    declared: Callable[[str], DeterminismClass | None] = lambda _: None
    _imaged: dict[str, str] = field(default_factory=dict)  # operation id -> result image

    @property
    def scope(self) -> tuple[str, str, str]:
        """Whose journal entries these are: user, scene and request of the approved plan."""
        a = self.approved
        return a.user, a.scene_id, a.request_id

    async def replay(self, ops: list[Operation], start: str) -> str | None:
        """Re-apply committed operations missing from the head; None if a hash diverges."""
        scene_hash = start
        for op in ops:
            entry = await self.journal.get(op_key(*self.scope, op.operation_id))
            if entry is not None and entry.result_image:
                # Never run it again: load the scene it left (results.py).
                if self.images is None:
                    return None
                try:
                    scene_hash = await self.images.load(entry.result_image)
                except Exception:  # noqa: BLE001 - reported as IDEMPOTENCY_CONFLICT
                    return None
                self._imaged[op.operation_id] = entry.result_image
                ok = True
            else:
                result = await self.bridge.call_tool(
                    op.tool_name, op.args, self.new_id(), timeout=self._budget(op)
                )
                scene_hash = await self.bridge.fingerprint()
                ok = result.ok
            if not ok or entry is None or scene_hash != entry.receipt.scene_hash_after:
                return None
            self.since.append(op)
        return scene_hash

    async def already_committed(self, index: int, entry: JournalEntry) -> Step:
        """An operation this request committed before: report it, change nothing."""
        mine = entry.run_id == self.approved.run_id  # a redelivery of the same run
        status: ReceiptStatus = "succeeded" if mine else "skipped_idempotent"
        receipt = msgspec.structs.replace(entry.receipt, status=status)
        # Same event id as the original announcement: a copy is dropped by the log.
        await self.events.emit(
            follow(
                self.approved,
                OperationSucceeded,
                self.clock(),
                index,
                operation_id=receipt.operation_id,
                mcp_call_id=receipt.mcp_call_id or "",
                blender_mutation_id=receipt.blender_mutation_id,
                receipt=receipt,
            )
        )
        return Step(
            receipt.operation_id,
            receipt,
            receipt.scene_hash_after or "",
            index=index,
            compensation=entry.compensation if mine else None,
        )

    async def execute(self, index: int, op: Operation, before: str) -> Step:
        call = _Call(index, op, self.new_id(), before)
        with correlated(operation_id=op.operation_id, mcp_call_id=call.mcp_call_id):
            await self.events.emit(
                self._event(
                    call, OperationStarted, tool_name=op.tool_name, scene_hash_before=before
                )
            )
            started = time.perf_counter()
            result = await self._invoke(op, call.mcp_call_id)
            call.ms = round((time.perf_counter() - started) * 1000, 3)
            step = await (self._succeeded if result.ok else self._failed)(call, result)
            with correlated(blender_mutation_id=step.receipt.blender_mutation_id):
                log.info("%s %s in %.0f ms", op.tool_name, step.receipt.status, call.ms)
            return step

    def skipped(
        self,
        op: Operation,
        reason: str = "not run: an earlier operation failed",
    ) -> Receipt:
        return Receipt(
            operation_id=op.operation_id,
            tool_name=op.tool_name,
            safety_level=op.safety_level,
            status="skipped",
            message=reason,
            determinism_class=self.declared(op.tool_name),
        )

    def _event(self, call: _Call, kind: type[_E], **fields: Any) -> _E:
        return follow(
            self.approved,
            kind,
            self.clock(),
            call.index,
            operation_id=call.op.operation_id,
            mcp_call_id=call.mcp_call_id,
            **fields,
        )

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

    def _determinism(self, call: _Call, result: ToolResult) -> dict[str, Any]:
        kind = result.determinism_class or self.declared(call.op.tool_name)
        return {"determinism_class": kind, "seed": result.seed}

    def _budget(self, op: Operation) -> float:
        """Seconds the bridge may take: a Python step brings its own limit (plus the
        sandbox's scene I/O and grace), which may be longer than the executor's."""
        declared = op.args.get("timeout_ms") if op.tool_name in PYTHON_TOOLS else None
        if not isinstance(declared, int):
            return self.op_timeout
        # Opening and saving the scene in the sandbox, the kill grace, and a sandboxed
        # Blender that may still be starting (docs/python-steps.md).
        extra = (2 * SCENE_IO_MS + KILL_GRACE_MS) / 1000 + SANDBOX_START_S
        return max(self.op_timeout, declared / 1000 + extra)

    async def _invoke(self, op: Operation, call_id: str) -> ToolResult:
        try:
            result = await self.bridge.call_tool(
                op.tool_name, op.args, call_id, timeout=self._budget(op)
            )
        except TimeoutError:
            await self.bridge.restart()
            done = len(self.since)
            return unfinished(
                f"exceeded its {self.op_timeout:g} s budget and was stopped; "
                f"its partial work was discarded, the {done} operation(s) "
                "committed before it are kept",
                code="timeout",
            )
        except Exception as exc:  # noqa: BLE001 - a dead bridge is an operation failure
            await self.bridge.restart()
            return unfinished(f"the Blender bridge stopped ({exc}); it was restarted")
        if self.bridge.generation != self.session.generation:
            # The process died between calls and a new one, holding none of the run's
            # scene, answered this call: its result describes the wrong scene.
            return unfinished(
                "the Blender bridge stopped during the run and was restarted; "
                "the scene it held was lost"
            )
        return result

    async def _succeeded(self, call: _Call, result: ToolResult) -> Step:
        try:
            after = await self._hash_after(call, result)
        except Exception as exc:  # noqa: BLE001 - the bridge died after the tool ran
            await self.bridge.restart()
            return await self._failed(
                call,
                unfinished(
                    f"the Blender bridge stopped after the tool ran ({exc}); it was restarted"
                ),
            )
        key = op_key(*self.scope, call.op.operation_id)
        image: str | None = None
        kind = result.determinism_class or self.declared(call.op.tool_name)
        if call.mutating and not repeatable(kind):
            try:
                image = await self._keep(key)
            except Exception as exc:  # noqa: BLE001 - without its image it cannot be kept
                return await self._failed(
                    call,
                    unfinished(
                        f"its result could not be stored for recovery ({exc}); it was undone"
                    ),
                )
        mutation_id = self.new_id() if call.mutating else None
        receipt = self._receipt(
            call,
            "succeeded",
            blender_mutation_id=mutation_id,
            scene_hash_after=after,
            result=result.data,
            **self._determinism(call, result),
        )
        # Journal first: an announced success is always a committed one. The entry is
        # stored with its group while the next operations run; its announcement waits for it
        # (ordered.py).
        stored = self.events.entry(
            key,
            JournalEntry(
                request_id=self.approved.request_id,
                operation_id=call.op.operation_id,
                args_digest=args_digest(call.op.args),
                run_id=self.approved.run_id,
                receipt=receipt,
                compensation=result.compensation,
                result_image=image,
            ),
        )
        if call.mutating:
            self.since.append(call.op)
        if image is not None:
            self._imaged[call.op.operation_id] = image
        await self.events.emit(
            self._event(call, OperationSucceeded, blender_mutation_id=mutation_id, receipt=receipt),
            after=stored,
        )
        return Step(
            call.op.operation_id,
            receipt,
            after,
            index=call.index,
            compensation=result.compensation,
        )

    async def _hash_after(self, call: _Call, result: ToolResult) -> str:
        """The scene hash after a successful call: the bridge sends it with a writing
        tool's result, so only an older bridge costs a second round trip."""
        if not call.mutating:
            return call.before
        if result.scene_hash is not None:
            return result.scene_hash
        return await self.bridge.fingerprint()

    async def _failed(self, call: _Call, result: ToolResult) -> Step:
        code, message = result.error_code, result.message
        contract = tool_failure(call.op.operation_id, call.op.tool_name, code, message)
        receipt = self._receipt(
            call, "failed", error_code=code, message=message, **self._determinism(call, result)
        )
        await self.events.emit(
            self._event(call, OperationFailed, receipt=receipt, failure=contract)
        )
        text = f"{call.op.operation_id} ({call.op.tool_name}) failed: {message}"
        if not call.mutating:
            return Step(
                call.op.operation_id, receipt, call.before, contract, message=text, index=call.index
            )
        method, restored = await self._rollback(call.before)
        if restored != call.before:
            bad = rollback_failure(call.op.operation_id, self.checkpoint_note(restored))
            return Step(
                call.op.operation_id,
                receipt,
                restored,
                bad,
                consistent=False,
                message=f"{text}; {bad.retry_hint}",
                index=call.index,
            )
        await self.events.emit(
            self._event(call, OperationRolledBack, method=method, scene_hash=restored)
        )
        rolled = msgspec.structs.replace(receipt, status="rolled_back", scene_hash_after=restored)
        return Step(
            call.op.operation_id, rolled, restored, contract, message=text, index=call.index
        )

    async def _keep(self, key: str) -> str:
        if self.images is None:
            raise RuntimeError("this executor keeps no result images")
        return await self.images.keep(key)

    def checkpoint_note(self, restored: str) -> str:
        head = self.session.head
        where = (
            f"revision {head.revision} (hash {head.scene_hash[:12]})" if head else "the empty scene"
        )
        return f"got {restored[:40]}; latest consistent checkpoint: {where}"

    async def _rollback(self, before: str) -> tuple[Literal["none", "checkpoint"], str]:
        """Return (method, hash): restore the state before the operation if it changed."""
        generation = self.bridge.generation
        try:
            current = await self.bridge.fingerprint()
        except Exception:  # noqa: BLE001 - a dead bridge has lost the scene: restore it
            await self.bridge.restart()
            current = ""
        if current == before and self.bridge.generation == generation:
            self.session.generation = generation  # a new process that holds the same scene
            return "none", current
        return "checkpoint", await self.restore(self.since)

    async def restore(self, redo: list[Operation]) -> str:
        """Load the checkpoint and replay ``redo``; the resulting hash, or why it failed.
        From the last operation with a result image on, that image is the checkpoint."""
        checkpoint: Path | None = self.session.checkpoint
        last = max((i for i, op in enumerate(redo) if op.operation_id in self._imaged), default=-1)
        self.session.generation = self.bridge.generation  # the process the scene is rebuilt in
        try:
            if last >= 0 and self.images is not None:
                await self.images.load(self._imaged[redo[last].operation_id])
            elif checkpoint is None:
                await self.bridge.reset()
            else:
                await self.bridge.load(str(checkpoint))
            for op in redo[last + 1 :]:
                result = await self.bridge.call_tool(
                    op.tool_name, op.args, self.new_id(), timeout=self._budget(op)
                )
                if not result.ok:
                    return f"unrestored (replaying {op.operation_id}: {result.message})"
            return await self.bridge.fingerprint()
        except Exception as exc:  # noqa: BLE001 - reported as ROLLBACK_FAILED
            return f"unrestored ({exc})"
