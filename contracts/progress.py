"""A run's live progress as data: one line per event worth showing.

The CLI renders a line with rich (the ``mark`` in the colour of its ``tone``); the gateway
streams its plain ``text`` as NDJSON. Neither knows how the other presents it.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from contracts.events import (
    AnyEvent,
    ApprovalRequested,
    Approved,
    Denied,
    GatesEvaluated,
    OperationFailed,
    OperationRolledBack,
    OperationSkipped,
    OperationSucceeded,
    Planned,
    PlanningStarted,
    PlanRejected,
    PolicyDecided,
    Replied,
    RunCompleted,
    RunFailed,
    RunRequested,
)

Tone = Literal["plain", "strong", "ok", "warn", "error"]


class ProgressLine(msgspec.Struct, frozen=True, kw_only=True):
    """One line of progress: ``mark`` is the part a renderer may emphasise, ``rest`` follows."""

    event: str  # the event's type tag
    tone: Tone
    mark: str
    rest: str
    indent: int = 2  # lines about a step sit under the run's first and last lines

    @property
    def text(self) -> str:
        """The line as plain text."""
        return " " * self.indent + self.mark + self.rest


def _line(event: AnyEvent, tone: Tone, mark: str, rest: str, indent: int = 2) -> ProgressLine:
    tag = str(event.__struct_config__.tag)
    return ProgressLine(event=tag, tone=tone, mark=mark, rest=rest, indent=indent)


def progress_line(event: AnyEvent) -> ProgressLine | None:
    """One line of live progress for an event, or None for events not worth a line."""
    match event:
        case RunRequested():
            return _line(event, "strong", f"run {event.run_id}", f" on scene {event.scene_id}", 0)
        case PlanningStarted():
            return _line(event, "plain", "", f"planning ({event.planner})")
        case Replied():
            return _line(event, "plain", "", f"answered without a plan: {event.text}")
        case Planned():
            ops = ", ".join(
                f"{o.operation_id} {o.tool_name}" for o in event.operation_set.operations
            )
            by = f"{event.planner} {event.model}" if event.model else event.planner
            again = f", iteration {event.iteration}" if event.iteration > 1 else ""
            return _line(
                event, "plain", "", f"planned {len(event.schedule)} operations ({by}{again}): {ops}"
            )
        case PolicyDecided():
            asks = [d for d in event.decisions if d.mode != "allow"]
            if not asks:
                return _line(event, "plain", "", "policy: every operation allowed")
            why = "; ".join(f"{d.operation_id} {d.mode} ({d.reason})" for d in asks)
            return _line(event, "plain", "", f"policy: {why}")
        case PlanRejected():
            model = f" ({event.model})" if event.model else ""
            rest = f" ({event.failure.error_code}) by the {event.planner} planner{model}"
            return _line(event, "error", "plan rejected", rest)
        case ApprovalRequested():
            return _line(
                event, "warn", "waiting for approval", f" of {', '.join(event.operation_ids)}"
            )
        case Approved() if event.approved_by != "policy":
            return _line(event, "plain", "", f"approved by {event.approved_by}")
        case OperationSucceeded():
            r = event.receipt
            return _line(
                event, "ok", "✓", f" {r.operation_id} {r.tool_name} {r.duration_ms:.1f} ms"
            )
        case OperationFailed():
            r = event.receipt
            rest = f" {r.operation_id} {r.tool_name}: {r.error_code}: {r.message}"
            return _line(event, "error", "✗", rest)
        case OperationRolledBack():
            return _line(event, "warn", "↺", f" {event.operation_id} rolled back ({event.method})")
        case OperationSkipped():
            return _line(event, "plain", "", f"- {event.operation_id} skipped: {event.reason}")
        case Denied():
            return _line(event, "error", "denied", f": {event.message}")
        case GatesEvaluated() if event.envelope.success:
            return _line(event, "ok", "gates passed", f": {', '.join(event.guardians)}")
        case GatesEvaluated():
            failed = ", ".join(event.envelope.failed_gates)
            why = "; ".join(event.envelope.messages[:3])
            return _line(event, "error", "gates failed", f" ({failed}): {why}")
        case RunCompleted():
            return _line(event, "ok", "completed", f": {event.summary}", 0)
        case RunFailed():
            return _line(
                event, "error", "failed", f" ({event.failure.error_code}): {event.message}", 0
            )
    return None
