"""The one-line description of each run event in a run's timeline. Pure: no I/O.

Kept apart from the projections because it is presentation: rewording a line here must
never change a row anything else depends on (only ``timeline.detail`` shows it).
"""

from __future__ import annotations

from contracts import events as ev

MAX_DETAIL = 240


def detail(event: ev.RunEvent) -> str:
    """One line a person reads in the run's timeline."""
    match event:
        case ev.RunRequested():
            what = repr(event.prompt) if event.prompt else "a plan as written"
            text = f"{event.user} asked for {what} on scene {event.scene_id}"
            if (o := event.origin) is not None:
                fork = o.kind == "fork"
                start = f"revision {o.base_revision}" if fork else f"operation {o.from_op}"
                text += f" ({o.kind} of {o.run} from {start})"
        case ev.PlanRejected() | ev.Denied() | ev.RunFailed():
            text = f"{event.failure.error_code}: {event.message}"
        case ev.PlanningStarted():
            text = f"the {event.planner} planner started planning"
        case ev.Replied():
            text = f"the {event.planner} planner answered without a plan: {event.text}"
        case ev.Planned():
            ops = len(event.operation_set.operations)
            text = f"{event.planner} planned {ops} operations (iteration {event.iteration})"
        case ev.PolicyDecided():
            modes = [d.mode for d in event.decisions]
            counts = ", ".join(f"{modes.count(m)} {m}" for m in sorted(set(modes)))
            text = f"policy {event.policy_set}: {counts}"
        case ev.ApprovalRequested():
            text = f"approval needed for {', '.join(event.operation_ids)}: {event.reason}"
        case ev.ApprovalResolved():
            text = f"{event.resolved_by} chose {event.decision}"
        case ev.Approved():
            text = f"{event.approved_by} approved {len(event.schedule)} operations"
        case ev.GatesEvaluated() if event.envelope.success:
            text = f"gates passed on revision {event.revision} ({', '.join(event.guardians)})"
        case ev.GatesEvaluated():
            failed = ", ".join(event.envelope.failed_gates)
            text = f"gates failed on revision {event.revision}: {failed}; " + "; ".join(
                event.envelope.messages
            )
        case ev.OperationStarted():
            text = f"{event.operation_id} started {event.tool_name}"
        case ev.OperationSucceeded():
            text = f"{event.operation_id} {event.receipt.status} ({event.receipt.tool_name})"
        case ev.OperationFailed():
            code, why = event.failure.error_code, event.receipt.message
            text = f"{event.operation_id} failed: {code} {why}"
        case ev.OperationRolledBack():
            text = f"{event.operation_id} rolled back by {event.method}"
        case ev.OperationSkipped():
            text = f"{event.operation_id} skipped: {event.reason}"
        case ev.Executed():
            outcome = event.failure.error_code if event.failure else "ok"
            text = f"executed {len(event.receipts)} operations: {outcome}"
        case ev.RunCompleted():
            text = event.summary
        case _:
            text = ev.event_kind(event)
    return text[:MAX_DETAIL]
