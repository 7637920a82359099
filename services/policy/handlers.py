"""Policy handlers: decide a plan, resume a run when a person resolves an approval, and
fail it when nobody does in time."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from contracts import subjects
from contracts.allowlist import AllowlistEntry, entry_id
from contracts.canonical import canonical_hash
from contracts.events import (
    AnyEvent,
    ApprovalRequested,
    ApprovalResolved,
    Approved,
    CancelRequested,
    Denied,
    Event,
    OperationDecision,
    PendingOperation,
    Planned,
    PolicyDecided,
    RunEvent,
    RunFailed,
    derive_event_id,
    follow,
)
from contracts.failures import RepairAction, failure
from contracts.fold import latest
from contracts.operations import Operation
from contracts.project_book import ProjectBook, approves_own
from contracts.projects import Role
from contracts.python_approvals import TRUSTED_TOOL, code_problem, standing_key, unquoted
from contracts.resolutions import canonical_resolution
from contracts.scene_files import IMPORT_TOOL
from contracts.tools import ToolSpec
from services.executor.client import CatalogSource
from services.policy.arguments import unsafe_argument
from services.policy.engine import PolicyEngine
from services.policy.ports import Allowlist
from services.policy.roles import may_answer, run_role
from services.runtime.service.consumer_spec import Delivery
from services.runtime.service.errors import Retry

security = logging.getLogger("blendmesh.security")

RunHistory = Callable[[str], Awaitable[Sequence[AnyEvent]]]
SceneOwner = Callable[[str], Awaitable[str | None]]
RunKinds = Callable[[str], Awaitable[set[str]]]
Projects = Callable[[], Awaitable[ProjectBook]]
# A run with one of these kinds is over, or going to be: nothing of it is decided now.
CLOSED = frozenset({"cancel_requested", "completed", "failed"})
OWNER_POLICY_ID = "blendmesh#scene-owner"
LOCK_POLICY_ID = "blendmesh#scene-lock"
ARGS_POLICY_ID = "blendmesh.args#unsafe-argument"
EXPIRY_POLL = 30.0  # longest wait between two looks at a pending approval


def request_hash(operations: Sequence[PendingOperation]) -> str:
    """What a resolution must quote: the hash of exactly the operations asked about."""
    return canonical_hash(list(operations))


def _trusted_code(decisions: Sequence[OperationDecision]) -> bool:
    return any(d.tool_name == TRUSTED_TOOL for d in decisions)


@dataclass
class PolicyHandlers:
    engine: PolicyEngine
    catalog: CatalogSource
    history: RunHistory  # a run's events, read back from the log
    allowlist: Allowlist
    scene_owner: SceneOwner  # who owns a scene (the executor's scene heads); None: nobody yet
    clock: Callable[[], float] = field(default=time.time)
    workspace: Path = field(default_factory=Path.cwd)  # paths in args must stay inside
    approval_ttl: float = 3600.0  # seconds a pending approval waits for a person
    # Who besides a run's own user may resolve its approvals (the registry's approvers).
    approvers: Callable[[], frozenset[str]] = field(default=frozenset)
    # Which kinds of event a run has (services.runtime.nats.history.run_kinds); None: not asked.
    kinds: RunKinds | None = None
    # The projects book (services/runtime/service/projects.py); None: every scene is its
    # owner's personal project and nothing is locked.
    projects: Projects | None = None

    async def _book(self) -> ProjectBook:
        return ProjectBook() if self.projects is None else await self.projects()

    def _role(self, book: ProjectBook, planned: Planned, owner: str | None) -> Role | None:
        return run_role(book, planned.scene_id, owner, planned.user)

    async def _may_answer(self, resolver: str, planned: Planned) -> bool:
        book, owner = await asyncio.gather(self._book(), self.scene_owner(planned.scene_id))
        return may_answer(book, planned.scene_id, owner, planned.user, resolver, self.approvers())

    async def _closed(self, run_id: str) -> bool:
        return self.kinds is not None and bool(CLOSED & await self.kinds(run_id))

    async def _decide(
        self,
        planned: Planned,
        op: Operation,
        tool: ToolSpec | None,
        owner: str | None,
        book: ProjectBook,
    ) -> OperationDecision:
        role = self._role(book, planned, owner)
        if role is None:
            # Naming a scene id never grants it: only its owner may change it.
            return OperationDecision(
                operation_id=op.operation_id,
                tool_name=op.tool_name,
                safety_level=op.safety_level,
                mode="deny",
                reason=f"scene {planned.scene_id} belongs to another user; use a scene id "
                "of your own",
                policy_ids=[OWNER_POLICY_ID],
            )
        held = book.lock(planned.scene_id, self.clock())
        if held is not None and held.holder != planned.user:
            return OperationDecision(
                operation_id=op.operation_id,
                tool_name=op.tool_name,
                safety_level=op.safety_level,
                mode="deny",
                reason=f"scene {planned.scene_id} is locked by {held.holder}; ask "
                f"{held.holder} to unlock it, or a lead of its project to break the lock",
                policy_ids=[LOCK_POLICY_ID],
            )
        problem = unsafe_argument(op.args, self.workspace) if tool is not None else None
        problem = problem or code_problem(op.tool_name, op.args)
        if problem is not None:
            return OperationDecision(
                operation_id=op.operation_id,
                tool_name=op.tool_name,
                safety_level=op.safety_level,
                mode="deny",
                reason=problem,
                policy_ids=[ARGS_POLICY_ID],
            )
        if op.tool_name == IMPORT_TOOL and owner is None and tool is not None:
            # A scene without a head has nothing an import could replace: its first
            # revision is a write like any other. The head is the executor's, never the
            # request's word; replacing an existing scene stays destructive.
            op = msgspec.structs.replace(op, safety_level="safe_write")
            tool = msgspec.structs.replace(tool, safety_level="safe_write")
        decision = self.engine.decide(planned.user, op, tool, planned.scene_id, role)
        if decision.mode != "require_approval":
            return decision
        key = standing_key(op.tool_name, op.args)
        entry = await self.allowlist.find(planned.user, key, planned.scene_id)
        if entry is None:
            return decision
        what = f"this code ({entry.code_sha256})" if entry.code_sha256 else op.tool_name
        return OperationDecision(
            operation_id=op.operation_id,
            tool_name=op.tool_name,
            safety_level=decision.safety_level,
            mode="allow",
            reason=f"{what} is always allowed for {entry.user} on {entry.scene_id}",
            policy_ids=[f"allowlist#{entry.entry_id}"],
        )

    async def on_planned(self, event: Planned) -> Sequence[Event]:
        # Two round trips at once: the handlers of every service share one event loop.
        catalog, owner, closed, book = await asyncio.gather(
            self.catalog.get(),
            self.scene_owner(event.scene_id),
            self._closed(event.run_id),
            self._book(),
        )
        if closed:
            return []  # cancelled while it was planned: the planner ends it
        if catalog is None:
            raise Retry("no tool catalog yet", 0.5)
        ops = event.operation_set.operations
        decisions = [
            await self._decide(event, op, catalog.get(op.tool_name), owner, book) for op in ops
        ]
        role = self._role(book, event, owner)
        lead_of = None if approves_own(role) else book.project_of(event.scene_id, owner or "")
        now = self.clock()
        out: list[Event] = [
            follow(
                event,
                PolicyDecided,
                now,
                decisions=decisions,
                policy_set=self.engine.policy_set,
                policy_set_hash=self.engine.policy_set_hash,
            )
        ]
        denied = [d for d in decisions if d.mode == "deny"]
        waiting = [d for d in decisions if d.mode == "require_approval"]
        if denied:
            reasons = "; ".join(f"{d.operation_id}: {d.reason}" for d in denied)
            repair: list[tuple[str, RepairAction]] = [
                (d.operation_id, "replace_args" if ARGS_POLICY_ID in d.policy_ids else "drop")
                for d in denied
            ]
            out.append(
                follow(
                    event,
                    Denied,
                    now,
                    failure=failure(
                        "POLICY_BLOCKED",
                        f"Remove denied operations or replace their arguments ({reasons})",
                        repair=repair,
                    ),
                    message=f"policy denied {reasons}",
                    operation_ids=[d.operation_id for d in denied],
                )
            )
        elif waiting and (not event.pre_approved or _trusted_code(waiting) or lead_of):
            # Approving up front covers destructive tools, never code nobody has read, and
            # never an artist's own: that waits for a lead.
            out.append(self._ask(event, waiting, now, lead_of))
        else:
            approver = event.user if waiting else "policy"
            out.append(self._approved(event, now, approver))
        return out

    def _ask(
        self, event: Planned, waiting: list[OperationDecision], now: float, lead_of: str | None
    ) -> ApprovalRequested:
        by_id = {op.operation_id: op for op in event.operation_set.operations}
        pending = [
            PendingOperation(
                operation_id=d.operation_id,
                tool=d.tool_name,
                safety_level=d.safety_level,
                args=by_id[d.operation_id].args,
            )
            for d in waiting
        ]
        return follow(
            event,
            ApprovalRequested,
            now,
            approval_id=derive_event_id(event.event_id, "approval"),
            operation_ids=[d.operation_id for d in waiting],
            reason="; ".join(f"{d.operation_id}: {d.reason}" for d in waiting),
            request_hash=request_hash(pending),
            operations=pending,
            expires_at=now + self.approval_ttl,
            lead_of=lead_of,
        )

    def _approved(
        self, planned: Planned, now: float, approver: str, cause: RunEvent | None = None
    ) -> Approved:
        return follow(
            cause or planned,
            Approved,
            now,
            scene_id=planned.scene_id,
            operation_set=planned.operation_set,
            schedule=planned.schedule,
            approved_by=approver,
            rollback_boundary=planned.rollback_boundary,
            catalog_version=planned.catalog_version,
        )

    def _expired(self, pending: ApprovalRequested, now: float) -> Denied:
        """The same event whichever path notices first, so the log keeps one copy."""
        ops = ", ".join(pending.operation_ids)
        return follow(
            pending,
            Denied,
            now,
            failure=failure(
                "APPROVAL_EXPIRED",
                f"nobody approved {ops} in time; run the request again to ask again",
                repair=[(op, "retry") for op in pending.operation_ids],
            ),
            message=f"the approval of {ops} expired unanswered",
            operation_ids=pending.operation_ids,
        )

    async def _open(
        self, run_id: str, approval_id: str
    ) -> tuple[Planned, ApprovalRequested] | None:
        """The run's plan and its approval when that approval still waits for a person."""
        events = list(await self.history(run_id))
        planned = latest(events, Planned)
        pending = latest(events, ApprovalRequested)
        if planned is None or pending is None or pending.approval_id != approval_id:
            return None
        after = events[events.index(pending) + 1 :]
        if any(isinstance(e, Approved | Denied | CancelRequested | RunFailed) for e in after):
            return None  # resolved or cancelled: a second resolution is a no-op
        return planned, pending

    async def on_resolved(self, event: ApprovalResolved) -> Sequence[Event]:
        """Resume the run; a resolution that matches nothing pending changes nothing."""
        found = await self._open(event.run_id, event.approval_id)
        if found is None:
            return []
        planned, pending = found
        if not await self._may_answer(event.resolved_by, planned):
            security.warning(
                "refused %r's resolution of approval %s of run %s: only %r (unless an "
                "artist), a lead of its scene's project or an approver may resolve it",
                event.resolved_by,
                event.approval_id,
                event.run_id,
                planned.user,
            )
            return []  # changes nothing: the approval stays pending
        if pending.request_hash and event.request_hash != pending.request_hash:
            return []  # answers a different request than the one pending: refused
        asked = [(op.tool, op.args) for op in pending.operations]
        if event.decision != "reject" and unquoted(asked, event.code_sha256):
            return []  # approves trusted code without naming it: refused, still pending
        now = self.clock()
        if pending.expires_at is not None and now >= pending.expires_at:
            return [self._expired(pending, now)]
        if event.decision == "reject":
            return [
                follow(
                    event,
                    Denied,
                    now,
                    failure=failure(
                        "APPROVAL_REJECTED",
                        f"{event.resolved_by} rejected {', '.join(pending.operation_ids)}; "
                        "plan without them or ask again",
                        repair=[(op, "drop") for op in pending.operation_ids],
                    ),
                    message=f"{event.resolved_by} rejected {', '.join(pending.operation_ids)}",
                    operation_ids=pending.operation_ids,
                )
            ]
        if canonical_resolution(event.decision) == "approve_and_always_allow":
            for op in pending.operations:
                await self.allowlist.add(
                    AllowlistEntry(
                        entry_id=entry_id(
                            planned.user, standing_key(op.tool, op.args), planned.scene_id
                        ),
                        user=planned.user,
                        tool=op.tool,
                        code_sha256=op.args.get("code_sha256") if op.tool == TRUSTED_TOOL else None,
                        scene_id=planned.scene_id,
                        created_at=event.at,
                        created_by=event.resolved_by,
                        run_id=event.run_id,
                    )
                )
        return [self._approved(planned, now, event.resolved_by, cause=event)]

    async def on_approval_requested(self, event: ApprovalRequested) -> Sequence[Event]:
        """The expiry timer, kept in the log: look again later until resolved or expired."""
        if event.expires_at is None:
            return []
        found = await self._open(event.run_id, event.approval_id)
        if found is None:
            return []
        now = self.clock()
        remaining = event.expires_at - now
        if remaining > 0:
            raise Retry(f"approval {event.approval_id} is pending", min(remaining, EXPIRY_POLL))
        return [self._expired(found[1], now)]

    async def handle(self, event: AnyEvent, delivery: Delivery) -> Sequence[Event]:
        match event:
            case Planned():
                return await self.on_planned(event)
            case ApprovalResolved():
                return await self.on_resolved(event)
        return []

    async def handle_expiry(self, event: AnyEvent, delivery: Delivery) -> Sequence[Event]:
        match event:
            case ApprovalRequested():
                return await self.on_approval_requested(event)
        return []


def filter_subjects(prefix: str) -> list[str]:
    """Subject -> handler table: what the policy consumes."""
    return [subjects.any_run(prefix, kind) for kind in ("planned", "approval_resolved")]


def expiry_subjects(prefix: str) -> list[str]:
    """What the expiry consumer reads back: the policy's own approval requests."""
    return [subjects.any_run(prefix, "approval_requested")]
