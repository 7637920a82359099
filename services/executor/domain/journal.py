"""The operation journal of spec 000 §Executor Guarantees 2, and how a run resumes from it.

An operation's key is ``user + scene + request_id + operation_id``; its entry records a
digest of the normalized args and the committed receipt with the scene hashes around it.
Entries live in a KV bucket with no expiry, so they outlive the event log's duplicate
window.

The journal is also the redo log for crash safety: if an executor dies after journaling
operations but before committing the scene revision, the next one replays the journaled
operations (verifying every hash) instead of running them as new work.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import Any

import msgspec

from contracts.bridge import Compensation
from contracts.operations import Operation
from contracts.receipts import Receipt

FLOAT_DIGITS = 9  # numbers equal to 9 decimal places are the same argument


def normalize(value: Any) -> Any:
    """One float normalization: every number becomes a float rounded to 9 places, -0 is 0."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise ValueError(f"non-finite number {value!r} in args")
        rounded = round(float(value), FLOAT_DIGITS)
        return 0.0 if rounded == 0 else rounded
    if isinstance(value, dict):
        return {str(k): normalize(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [normalize(v) for v in value]
    raise TypeError(f"unsupported value {value!r} in args")


def args_digest(args: dict[str, Any]) -> str:
    """Canonical JSON (sorted keys, normalized numbers) hashed: equal args, equal digest."""
    canonical = msgspec.json.encode(normalize(args), order="sorted")
    return hashlib.sha256(canonical).hexdigest()


def op_key(user: str, scene_id: str, request_id: str, operation_id: str) -> str:
    """A KV-safe key for one operation of one request of one user on one scene.

    Scoped by user and scene, so nobody's request_id can block another user's run with an
    IDEMPOTENCY_CONFLICT, nor skip an operation as already committed on another scene.
    """
    parts = (user, scene_id, request_id, operation_id)
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


class JournalEntry(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One committed operation."""

    request_id: str
    operation_id: str
    args_digest: str
    run_id: str  # the run that committed it
    receipt: Receipt
    compensation: Compensation | None = None  # the inverse call the tool declared
    # The stored scene right after an operation a replay must not call again (results.py).
    result_image: str | None = None


@dataclass(frozen=True)
class Conflict:
    """The journal and the request or the scene disagree: execute nothing."""

    operation_id: str
    reason: str


@dataclass(frozen=True)
class Resume:
    """Which journaled operations to skip, and which of them to replay first."""

    done: dict[str, JournalEntry] = field(default_factory=dict)  # skip: already committed
    replay: list[str] = field(default_factory=list)  # committed, but not in the scene yet


def plan_resume(
    schedule: list[str],
    ops: dict[str, Operation],
    entries: dict[str, JournalEntry],
    head_hash: str,
) -> Resume | Conflict:
    """Decide how a (re)delivered or re-submitted plan continues from the journal."""
    for op_id, entry in entries.items():
        if entry.args_digest != args_digest(ops[op_id].args):
            return Conflict(op_id, f"{op_id} was committed for this request with other args")
    journaled = [op_id for op_id in schedule if op_id in entries]
    if not journaled:
        return Resume()
    if journaled != schedule[: len(journaled)]:
        return Conflict(journaled[0], "the journal holds operations out of schedule order")
    chain = [entries[op_id].receipt for op_id in journaled]
    if head_hash == chain[-1].scene_hash_after:
        return Resume(done={op_id: entries[op_id] for op_id in journaled})
    for position, receipt in enumerate(chain):
        if head_hash == receipt.scene_hash_before:
            return Resume(
                done={op_id: entries[op_id] for op_id in journaled},
                replay=journaled[position:],
            )
    return Conflict(
        journaled[-1],
        f"the scene changed since this request committed {journaled[-1]} "
        f"(scene hash {head_hash[:12]} is not one this request produced)",
    )
