"""Policy handlers: decide a plan, and resume a run when a person resolves an approval."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from contracts import subjects
from contracts.events import (
    AnyEvent,
    ApprovalRequested,
    ApprovalResolved,
    Approved,
    Denied,
    Event,
    Planned,
    PolicyDecided,
    RunEvent,
    derive_event_id,
    follow,
)
from contracts.failures import failure
from services.policy.engine import PolicyEngine
from services.runtime.catalog import CatalogSource
from services.runtime.consumer import Delivery
from services.runtime.errors import Retry

RunHistory = Callable[[str], Awaitable[Sequence[AnyEvent]]]


@dataclass
class PolicyHandlers:
    engine: PolicyEngine
    catalog: CatalogSource
    history: RunHistory  # a run's events, read back from the log
    clock: Callable[[], float] = field(default=time.time)

    async def on_planned(self, event: Planned) -> Sequence[Event]:
        catalog = await self.catalog.get()
        if catalog is None:
            raise Retry("no tool catalog yet", 0.5)
        decisions = [
            self.engine.decide(event.user, op, catalog.get(op.tool_name))
            for op in event.operation_set.operations
        ]
        now = self.clock()
        out: list[Event] = [
            follow(
                event, PolicyDecided, now, decisions=decisions, policy_set=self.engine.policy_set
            )
        ]
        denied = [d for d in decisions if d.mode == "deny"]
        waiting = [d for d in decisions if d.mode == "require_approval"]
        if denied:
            reasons = "; ".join(f"{d.operation_id}: {d.reason}" for d in denied)
            out.append(
                follow(
                    event,
                    Denied,
                    now,
                    failure=failure(
                        "POLICY_BLOCKED",
                        f"Remove or replace denied operations ({reasons})",
                        repair=[(d.operation_id, "drop") for d in denied],
                    ),
                    message=f"policy denied {reasons}",
                    operation_ids=[d.operation_id for d in denied],
                )
            )
        elif waiting and not event.pre_approved:
            reasons = "; ".join(f"{d.operation_id}: {d.reason}" for d in waiting)
            out.append(
                follow(
                    event,
                    ApprovalRequested,
                    now,
                    approval_id=derive_event_id(event.event_id, "approval"),
                    operation_ids=[d.operation_id for d in waiting],
                    reason=reasons,
                )
            )
        else:
            approver = event.user if waiting else "policy"
            out.append(self._approved(event, now, approver))
        return out

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
        )

    async def on_resolved(self, event: ApprovalResolved) -> Sequence[Event]:
        """Resume the run; a resolution that matches nothing pending changes nothing."""
        events = list(await self.history(event.run_id))
        planned = next((e for e in reversed(events) if isinstance(e, Planned)), None)
        pending = next((e for e in reversed(events) if isinstance(e, ApprovalRequested)), None)
        if planned is None or pending is None or pending.approval_id != event.approval_id:
            return []
        after = events[events.index(pending) + 1 :]
        if any(isinstance(e, Approved | Denied) for e in after):
            return []  # already resolved: a second resolution is a no-op
        now = self.clock()
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
        return [self._approved(planned, now, event.resolved_by, cause=event)]

    async def handle(self, event: AnyEvent, delivery: Delivery) -> Sequence[Event]:
        match event:
            case Planned():
                return await self.on_planned(event)
            case ApprovalResolved():
                return await self.on_resolved(event)
        return []


def filter_subjects(prefix: str) -> list[str]:
    """Subject -> handler table: what the policy consumes."""
    return [subjects.any_run(prefix, kind) for kind in ("planned", "approval_resolved")]
