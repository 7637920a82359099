"""Running an approved schedule against the bridge: spec 000 §Executor Guarantees.

One run, in order: take the scene's lease and load its head revision; refuse what this
runtime cannot do (001 capability gate); resume from the journal (operations this request
already committed are skipped or replayed, never applied twice); run each remaining
operation, journaling it before its success is announced; on a failure restore the
consistency point of the run's rollback boundary and verify it by hash; commit the new
revision with a fenced compare-and-set.

The state before an operation is a checkpoint plus a redo log: the head revision's file
and the deterministic operations committed since, replayed only when an operation fails
(writing a .blend before every operation would cost more than the operations).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
from opentelemetry.trace import StatusCode

from contracts.bridge import BlenderProfile
from contracts.events import Approved, Event, Executed, OperationSkipped, RunRequested, follow
from contracts.failures import FailureContract, failure
from contracts.inspection import RunRecord
from contracts.receipts import Receipt
from contracts.scenes import Head
from contracts.session import BUS, SessionContract, negotiate
from contracts.tools import DeterminismClass, ToolCatalog
from services.executor.domain.cancel_watch import CancelWatch, Look
from services.executor.domain.capability import Refusal, gate
from services.executor.domain.inspection import run_record
from services.executor.domain.journal import Conflict, JournalEntry, op_key, plan_resume
from services.executor.domain.operation import OperationRunner, Step
from services.executor.domain.ordered import OrderedEvents
from services.executor.domain.ports import (
    Bridge,
    Journal,
    LeaseLost,
    SceneSummaries,
    StaleCommit,
)
from services.executor.domain.preview_worker import PreviewWorker
from services.executor.domain.results import ResultImages
from services.executor.domain.revision_notes import Described, RevisionNotes, discard
from services.executor.domain.scene_tools import SceneTools
from services.executor.domain.session import Scenes, SceneSession
from services.executor.domain.undo import undo_run
from services.runtime.service import tracing

log = logging.getLogger("blendmesh.executor")

Emit = Callable[[Event], Awaitable[None]]


@dataclass
class PlanRunner:
    bridge: Bridge
    scenes: Scenes
    journal: Journal
    catalog: Callable[[], ToolCatalog]
    profile: Callable[[], BlenderProfile]
    op_timeout: float = 60.0
    summaries: SceneSummaries | None = None  # where planners read what a scene holds
    # Renders each scene's newest revision on its own bridge; None: no previews.
    preview_worker: PreviewWorker | None = None
    scene_tools: SceneTools | None = None  # scene.import and scene.revert, answered here
    clock: Callable[[], float] = field(default=time.time)
    new_id: Callable[[], str] = field(default=lambda: str(uuid.uuid4()))
    allow_unsafe: bool = False  # the operator's opt-in to unsafe_ops tools (spec 001)
    cancels: Look | None = None  # a run's cancel in the log; None: runs are not cancelled
    release: str = ""  # the blendmesh version this executor runs, recorded in each result
    # Why ``user`` may not change a scene ``owner`` owns (its role in the scene's project,
    # another user's lock), or None when it may; None here: only the owner may.
    refusal: Callable[[str, str, str], Awaitable[str | None]] | None = None

    async def _refusal(self, head: Head | None, approved: Approved) -> str | None:
        if head is None or not head.owner:
            return None
        if self.refusal is not None:
            return await self.refusal(approved.scene_id, head.owner, approved.user)
        if head.owner != approved.user:
            return f"scene {approved.scene_id} belongs to another user; use a scene id of your own"
        return None

    def contract(self, requested: RunRequested | None) -> SessionContract:
        """The run's session contract: the host its request came through x this bridge's
        Blender, with the caller's determinism request and the operator's opt-in."""
        return negotiate(
            requested.host if requested else BUS,
            self.profile(),
            determinism=requested.determinism if requested else "any",
            allow_unsafe=self.allow_unsafe,
        )

    async def run(
        self,
        approved: Approved,
        emit: Emit,
        record: RunRecord | None = None,
        requested: RunRequested | None = None,
        flush: Callable[[], None] | None = None,
    ) -> Executed:
        """Run ``approved``; ``record`` is what the run did as the inspection artifact tells
        it (its approvals come from the run's log), by default its operations alone;
        ``requested`` is the run's request, whose host and determinism the gate reads;
        ``flush`` starts storing the events emitted so far, called once the operations
        are over."""
        session = await self.scenes.open(approved.scene_id)  # LeaseHeld: try again later
        events = OrderedEvents(emit, self.journal)
        watch = CancelWatch(self.cancels, approved.run_id)  # its first look starts now
        try:
            run = record or run_record(approved)
            contract = self.contract(requested)
            executed = await self._run(approved, session, events, run, contract, watch, flush)
            await events.settle()  # a refusal may return before the run's own settle
            return executed
        except BaseException:
            await events.abandon()
            raise
        finally:
            await watch.close()
            await self.scenes.close(session)

    async def _run(
        self,
        approved: Approved,
        session: SceneSession,
        events: OrderedEvents,
        record: RunRecord,
        session_contract: SessionContract,
        watch: CancelWatch,
        flush: Callable[[], None] | None = None,
    ) -> Executed:
        ops = {op.operation_id: op for op in approved.operation_set.operations}
        bridge: Bridge = self.bridge
        if self.scene_tools is not None:
            bridge = self.scene_tools.bind(bridge, approved.scene_id, approved.user)
        steps = OperationRunner(
            bridge,
            self.journal,
            approved,
            session,
            events,
            self.op_timeout,
            self.clock,
            self.new_id,
            images=ResultImages(self.scenes.store, self.bridge, self.scenes.work_dir / "results"),
            declared=self._declared,
        )
        head = session.head
        refused = await self._refusal(head, approved)
        if refused is not None:
            # Policy denies this before anyone is asked; this is the executor's own lock.
            contract = failure(
                "POLICY_BLOCKED",
                refused,
                recoverable=False,
                repair=[(op_id, "drop") for op_id in approved.schedule],
            )
            return await self._refused(approved, steps, contract, session.start_hash)
        refusal = gate(list(ops.values()), self.catalog(), session_contract)
        if refusal is not None:
            return await self._refused(
                approved, steps, refusal.contract, session.start_hash, refusal
            )
        entries = await self._journaled(approved)
        resume = plan_resume(approved.schedule, ops, entries, session.start_hash)
        if isinstance(resume, Conflict):
            contract = failure(
                "IDEMPOTENCY_CONFLICT",
                f"{resume.reason}; submit the plan with a new request_id to apply it again",
                repair=[(resume.operation_id, "replace_args")],
            )
            return await self._refused(approved, steps, contract, session.start_hash)
        scene_hash = await steps.replay([ops[i] for i in resume.replay], session.start_hash)
        if scene_hash is None:
            contract = failure(
                "IDEMPOTENCY_CONFLICT",
                "replaying the journal did not reproduce "
                "the committed scene; submit with a new request_id",
                recoverable=False,
                repair=[(resume.replay[0], "retry")],
            )
            return await self._refused(approved, steps, contract, session.start_hash)

        receipts: list[Receipt] = []
        done: list[Step] = []
        failed: Step | None = None
        for index, op_id in enumerate(approved.schedule):
            op = ops[op_id]
            if failed is None and await watch.asked() is not None:
                failed = watch.stopped(steps, op, index, scene_hash)
            if failed is not None:
                receipts.append(steps.skipped(op, watch.reason(failed)))
                await events.emit(
                    follow(
                        approved,
                        OperationSkipped,
                        self.clock(),
                        index,
                        operation_id=op_id,
                        reason=watch.reason(failed),
                    )
                )
                continue
            watch.again()  # looks for a cancel while this operation runs
            if op_id in resume.done:
                step = await self._traced(
                    op.tool_name, steps.already_committed(index, resume.done[op_id])
                )
            else:
                step = await self._traced(op.tool_name, steps.execute(index, op, scene_hash))
            scene_hash = step.hash_after
            if step.failure is not None:
                failed = step
            else:
                done.append(step)
            receipts.append(step.receipt)
        last = ops[approved.schedule[-1]] if approved.schedule else None
        if failed is None and last is not None and await watch.asked() is not None:
            failed = watch.stopped(steps, last, len(approved.schedule) - 1, scene_hash)
        # A cancel keeps nothing of the run, whatever its boundary.
        whole = approved.rollback_boundary == "run" or watch.cancel is not None
        if failed is not None and failed.consistent and whole:
            scene_hash, failed = await undo_run(steps, done, failed)
            undone = {s.op_id: s.receipt for s in done}
            receipts = [undone.get(r.operation_id, r) for r in receipts]
        # Every journal entry stored and every operation event sent before a revision is
        # built on them: a write that failed fails the run here, and it resumes later.
        await events.settle()
        if flush is not None:
            flush()  # stored while Blender saves and checks the revision, not after it
        return await self._finish(approved, session, receipts, scene_hash, failed, record)

    def _declared(self, tool_name: str) -> DeterminismClass | None:
        tool = self.catalog().get(tool_name)
        return tool.determinism_class if tool else None

    async def _traced(self, tool_name: str, step: Awaitable[Step]) -> Step:
        """Await one operation inside its span: its events and tool call join the run's trace."""
        with tracing.tracer().start_as_current_span(f"operation {tool_name}") as span:
            done = await step
            span.set_attributes(tracing.receipt_attributes(done.receipt))
            if done.failure is not None:
                span.set_status(StatusCode.ERROR, done.failure.error_code)
            return done

    async def _journaled(self, approved: Approved) -> dict[str, JournalEntry]:
        entries = await asyncio.gather(
            *(
                self.journal.get(op_key(approved.user, approved.scene_id, approved.request_id, i))
                for i in approved.schedule
            )
        )
        return {i: e for i, e in zip(approved.schedule, entries, strict=True) if e is not None}

    async def _finish(
        self,
        approved: Approved,
        session: SceneSession,
        receipts: list[Receipt],
        scene_hash: str,
        failed: Step | None,
        record: RunRecord,
    ) -> Executed:
        contract = failed.failure if failed else None
        message = failed.message if failed else ""
        blend_path: str | None = None
        described: asyncio.Future[Described] | None = None
        # A failed run that leaves a new scene as empty as it found it has nothing to keep:
        # no revision 1 of nothing, recorded as a change (the scene stays unknown).
        nothing = session.head is None and failed is not None and scene_hash == session.head_hash
        if (failed is None or failed.consistent) and not nothing:
            saved = asyncio.Event()
            if self.scenes.writes(session, scene_hash):
                next_revision = (session.head.revision if session.head else 0) + 1
                expected = (next_revision, scene_hash, record)
                described = self._notes().describe(approved.scene_id, saved, expected)
            try:
                blend_path = str(
                    await self.scenes.commit(session, scene_hash, approved.user, saved)
                )
            except (StaleCommit, LeaseLost) as exc:
                await discard(described, saved)
                contract = failure(
                    "LEASE_LOST",
                    f"{exc}; run the request again",
                    repair=[(receipts[0].operation_id, "retry")] if receipts else [],
                )
                # The head is someone else's now: this run has no revision to describe.
                return self._executed(approved, receipts, scene_hash, None, contract, str(exc))
            except BaseException:
                await discard(described, saved)
                raise
        revision, inspection = await self._inspect(session, record, described)
        return self._executed(
            approved, receipts, scene_hash, blend_path, contract, message, revision, inspection
        )

    def _notes(self) -> RevisionNotes:
        return RevisionNotes(self.bridge, self.scenes.store, self.summaries, self.new_id)

    async def _inspect(
        self, session: SceneSession, record: RunRecord, described: asyncio.Future[Described] | None
    ) -> tuple[int | None, str | None]:
        """The revision the run leaves the scene at, and its inspection artifact: written now
        for a revision this run committed, otherwise the head's own (None if it has none)."""
        head = session.head
        if head is None:
            return None, None
        if described is not None:
            return head.revision, await self._notes().write(head, record, described)
        try:
            return head.revision, await self.scenes.store.inspection(head)
        except Exception as exc:  # noqa: BLE001 - the revision stands; the guardians see None
            log.warning(
                "no inspection of scene %s revision %d: %s", head.scene_id, head.revision, exc
            )
            return head.revision, None

    async def _refused(
        self,
        approved: Approved,
        steps: OperationRunner,
        contract: FailureContract,
        scene_hash: str,
        refusal: Refusal | None = None,
    ) -> Executed:
        """Nothing executes: every operation is reported skipped with the reason, except
        the one the capability gate refused, which failed with the gate's 001 code."""
        receipts = []
        for op in approved.operation_set.operations:
            receipt = steps.skipped(op, contract.retry_hint)
            if refusal is not None and op.operation_id == refusal.operation_id:
                receipt = msgspec.structs.replace(receipt, status="failed", error_code=refusal.code)
            receipts.append(receipt)
        return self._executed(approved, receipts, scene_hash, None, contract, contract.retry_hint)

    def unserved(
        self, approved: Approved, contract: FailureContract, receipts: list[Receipt]
    ) -> Executed:
        """The result of a run no executor of its pinned catalog took (ADR 0053): nothing
        ran and no scene was opened, so it names no scene hash."""
        return self._executed(approved, receipts, "", None, contract, contract.retry_hint)

    def _executed(
        self,
        approved: Approved,
        receipts: list[Receipt],
        scene_hash: str,
        blend_path: str | None,
        contract: FailureContract | None,
        message: str,
        revision: int | None = None,
        inspection: str | None = None,
    ) -> Executed:
        return follow(
            approved,
            Executed,
            self.clock(),
            scene_id=approved.scene_id,
            receipts=receipts,
            scene_hash=scene_hash,
            blend_path=blend_path,
            failure=contract,
            message=message,
            revision=revision,
            inspection=inspection,
            renders_preview=self._previews(blend_path, revision),
            blendmesh_version=self.release,
            catalog_version=self.catalog().version,
            blender_version=self.profile().version,
        )

    def _previews(self, blend_path: str | None, revision: int | None) -> bool:
        """Whether ``preview`` will ask for a picture of what a run with these results left:
        the result says so, for doors that would otherwise wait for one in vain."""
        return self.preview_worker is not None and blend_path is not None and revision is not None

    async def preview(self, executed: Executed) -> None:
        """Ask for a picture of the revision the run left its scene at. The preview worker
        renders it on its own bridge, so this returns at once: the next run never waits
        for a picture, and failing to render only logs."""
        if executed.blend_path is None or executed.revision is None:
            return
        if self.preview_worker is None:
            return
        revision = self.scenes.revision_path(executed.scene_id, executed.revision)
        blend = revision if revision.exists() else Path(executed.blend_path)
        shelf = self.scenes.shelf
        project = shelf.project if shelf is not None else None  # the run's scene's, still
        self.preview_worker.submit(executed.scene_id, executed.revision, blend, project)
