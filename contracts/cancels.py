"""How a cancelled run ends, whichever service ends it (the planner before execution, the
executor during it): one failure, naming who cancelled and why."""

from __future__ import annotations

from contracts.events import CancelRequested
from contracts.failures import ErrorCode, FailureContract, failure

CANCELLED: ErrorCode = "RUN_CANCELLED"


def cancelled(cancel: CancelRequested) -> tuple[FailureContract, str]:
    """The failure a cancel ends a run with, and its message: who cancelled, and why."""
    why = f": {cancel.reason}" if cancel.reason else ""
    text = f"{cancel.cancelled_by} cancelled the run{why}"
    hint = f"{text}. The scene stays at its last committed revision; ask again to run it"
    return failure(CANCELLED, hint, recoverable=False), text
