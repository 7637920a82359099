"""How a run ends, whichever planner made it: the terminal events built from an outcome."""

from __future__ import annotations

from contracts.events import Executed, RunCompleted, follow


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
