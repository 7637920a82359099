"""How a run ends, whichever planner made it: the terminal events built from an outcome."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from contracts.events import Executed, RunCompleted, follow
from contracts.failures import FailureContract
from contracts.geonodes import step_of
from contracts.receipts import Receipt


def completed(event: Executed, now: float) -> RunCompleted:
    """The run completed: say how many operations were applied (skipped ones count)."""
    done = sum(1 for r in event.receipts if r.status in ("succeeded", "skipped_idempotent"))
    summary = f"{done} of {len(event.receipts)} operations applied to scene {event.scene_id}"
    return follow(
        event,
        RunCompleted,
        now,
        summary=summary,
        blend_path=event.blend_path,
        scene_hash=event.scene_hash,
    )


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
