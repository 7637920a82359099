"""Whether this executor takes an approved run, by the tool catalog the run is pinned to.

A plan is made and judged against one catalog (``Planned.catalog_version``); during a
rolling upgrade executors of two catalogs bind the same consumer. An executor of another
catalog leaves the run to one that serves it: it hands the message back (a delayed nak)
and never acks, fails or dead-letters it while one may still come. When none has come
within the wait, or the message's deliveries are nearly spent, the run fails with
CATALOG_UNSERVED, whose hint says what to do (ADR 0053). Pure: no I/O, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass

from contracts.cancels import cancelled
from contracts.events import Approved, CancelRequested
from contracts.failures import FailureContract, failure
from contracts.receipts import Receipt

FIRST_DELAY = 0.5  # seconds before the first hand-back comes round again
MAX_DELAY = 5.0  # so an executor of the catalog that starts late waits this long at most


@dataclass(frozen=True)
class Leave:
    """Hand the run back, to come round again after ``delay`` seconds."""

    delay: float
    reason: str


@dataclass(frozen=True)
class Unserved:
    """Nobody served the pin in time: the run's result is this failure."""

    failure: FailureContract
    message: str
    receipts: list[Receipt]


def serves(approved: Approved, catalog_version: str) -> bool:
    """An approval from before the pin (no catalog named) runs on any executor."""
    return not approved.catalog_version or approved.catalog_version == catalog_version


def pinned_elsewhere(
    approved: Approved,
    catalog_version: str,
    *,
    now: float,
    wait: float,
    delivered: int,
    max_deliver: int,
    cancel: CancelRequested | None = None,
) -> Leave | Unserved | None:
    """None: this executor runs it. Else whether to hand it back or to end it.

    ``delivered`` counts this delivery; the message ends here one delivery before the
    consumer loop would dead-letter it, so the run gets its own failure, not a dead letter.
    A run cancelled while it waits ends here at once: nothing of it ran, and the
    executor, which holds it, is who reports a cancel (ADR 0048).
    """
    if serves(approved, catalog_version):
        return None
    pinned = approved.catalog_version
    if cancel is not None:
        contract, text = cancelled(cancel)
        return Unserved(failure=contract, message=text, receipts=_skipped(approved, text))
    waited = max(0.0, now - approved.at)
    if waited < wait and delivered < max_deliver - 1:
        delay = min(FIRST_DELAY * 1.5 ** max(delivered - 1, 0), MAX_DELAY)
        reason = (
            f"run {approved.run_id} is pinned to tool catalog {pinned}; this executor "
            f"serves {catalog_version}: left for an executor of {pinned} (it fails "
            f"CATALOG_UNSERVED in {wait - waited:.0f} s if none takes it)"
        )
        return Leave(delay=delay, reason=reason)
    hint = (
        f"no executor serving tool catalog {pinned}, which the run was planned with, took "
        f"it within {waited:.0f} s (BLENDMESH_CATALOG_WAIT); the executors here serve "
        f"{catalog_version}. Start an executor of that release, or run the request again "
        "to plan it against the catalog served now."
    )
    receipts = _skipped(approved, "not run: no executor serves the run's catalog")
    return Unserved(failure=failure("CATALOG_UNSERVED", hint), message=hint, receipts=receipts)


def _skipped(approved: Approved, why: str) -> list[Receipt]:
    return [
        Receipt(
            operation_id=op.operation_id,
            tool_name=op.tool_name,
            safety_level=op.safety_level,
            status="skipped",
            message=why,
        )
        for op in approved.operation_set.operations
    ]
