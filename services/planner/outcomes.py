"""How a run ends, whichever planner made it: the terminal events built from an outcome."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import msgspec

from contracts import subjects
from contracts.events import (
    DeadLettered,
    Event,
    Executed,
    GatesEvaluated,
    Replied,
    RunCompleted,
    RunEvent,
    RunFailed,
    RunRequested,
    derive_event_id,
    follow,
)
from contracts.failures import FailureContract, failure
from contracts.geonodes import step_of
from contracts.receipts import Receipt
from contracts.snapshot_text import described
from services.planner.rules.parse import UnreadableRequest


def completed(event: Executed, now: float, gates: GatesEvaluated | None = None) -> RunCompleted:
    """The run completed: say how many operations were applied (skipped ones count), and
    carry its receipts, revision and gates so the event alone is the run's result."""
    done = sum(1 for r in event.receipts if r.status in ("succeeded", "skipped_idempotent"))
    summary = described(event.scene_id, event.receipts) or (
        f"{done} of {len(event.receipts)} operations applied to scene {event.scene_id}"
    )
    return follow(
        event,
        RunCompleted,
        now,
        summary=summary,
        blend_path=event.blend_path,
        scene_hash=event.scene_hash,
        scene_id=event.scene_id,
        receipts=event.receipts,
        revision=event.revision,
        gates=gates.envelope if gates is not None else None,
        renders_preview=event.renders_preview,
    )


def replied(
    cause: RunEvent,
    planner: str,
    text: str,
    now: float,
    scene_id: str | None = None,
    model: str | None = None,
) -> list[Event]:
    """A run answered in words (spec 002 §4.5): the reply, then the run's completion with
    the same text as its summary, so every door shows it. Nothing ran; no revision."""
    scene = scene_id if scene_id is not None else getattr(cause, "scene_id", None)
    return [
        follow(cause, Replied, now, planner=planner, text=text, model=model),
        follow(
            cause,
            RunCompleted,
            now,
            summary=text,
            blend_path=None,
            scene_hash=None,
            scene_id=scene,
        ),
    ]


def naming_step(
    contract: FailureContract, message: str, receipts: Sequence[Receipt]
) -> tuple[FailureContract, str]:
    """The failure of an execution, its hint and message naming the failing ``step.id``
    when the failing operation was compiled from a spec 004 step (§6)."""
    failed = next((r.operation_id for r in receipts if r.status == "failed"), None)
    if failed is None and contract.minimal_repair_plan:
        failed = contract.minimal_repair_plan[0].operation_id
    step = step_of(failed) if failed is not None else None
    if step is None or contract.retry_hint.startswith(f"step {step}"):
        return contract, message
    hint = f"step {step} failed: {contract.retry_hint}"
    return msgspec.structs.replace(contract, retry_hint=hint), f"step {step} failed: {message}"


def dead_run(letter: DeadLettered, requested: RunRequested, now: float) -> RunFailed:
    """The end of a run whose event no service could process: failed, never left open."""
    kind = letter.subject.rsplit(".", 1)[-1]
    message = (
        f"the {letter.consumer} service could not process this run's {kind} event "
        f"after {letter.deliveries} tries, so the run ends here"
    )
    contract = failure(
        "INTERNAL_ERROR",
        "Run the request again; if it fails the same way, it is a blendmesh bug: "
        "the service's log names the cause",
    )
    # Indexed by the dead letter's stream sequence: never the id of the planner's own
    # RunFailed for this request.
    return follow(requested, RunFailed, now, letter.stream_seq, failure=contract, message=message)


def unreadable_request(letter: DeadLettered, run_id: str, now: float) -> RunFailed | None:
    """The end of a run whose ``run.requested`` did not match its schema, so a client that
    follows ``run_id`` hears why instead of waiting for ever. Ids the payload carries are
    kept when they are valid; None for a dead letter of any other event."""
    if letter.subject.rsplit(".", 1)[-1] != "requested":
        return None
    claimed = _fields(letter.payload)

    def token(name: str, default: str) -> str:
        value = claimed.get(name)
        try:
            return subjects.check_token(value, name) if isinstance(value, str) else default
        except ValueError:
            return default

    contract = failure(
        "REQUEST_UNREADABLE",
        "Send a run.requested that matches contracts/schemas/events/run.requested.v1.json "
        f"({letter.reason[:300]})",
    )
    return RunFailed(
        event_id=derive_event_id(letter.event_id, "run.failed"),
        at=now,
        run_id=run_id,
        request_id=token("request_id", run_id),
        thread_id=token("thread_id", run_id),
        user=token("user", "unknown"),
        causation_id=letter.event_id,
        failure=contract,
        message=f"the run request could not be read, so the run ends here: {letter.reason}",
    )


def _fields(payload: str) -> dict[str, Any]:
    try:
        found = json.loads(payload)
    except ValueError:  # not JSON, or cut short by the dead letter's excerpt
        return {}
    return found if isinstance(found, dict) else {}


def refused(exc: UnreadableRequest) -> FailureContract:
    """The failure of a refused request: say it another way, or no tool does it."""
    if exc.kind == "no_tool":
        return failure(
            "REQUEST_UNREADABLE",
            f"No tool does {exc.unread!r}; ask for something else",
            recoverable=False,
        )
    return failure(
        "REQUEST_UNREADABLE", f"Rephrase {exc.unread!r} with the offline grammar (docs/grammar.md)"
    )
