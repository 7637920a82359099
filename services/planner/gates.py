"""What a failed verification gate means for a run (spec 004 §8). Pure: no I/O.

The envelope goes back to a planner that can repair (the model's next iteration, within
002 §4's three) or ends the run ``GATES_FAILED`` with a failure contract whose hint is
built from the gates' messages, and whose repair plan names the operations that touched
what the messages name.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from contracts.events import Executed, Planned
from contracts.failures import FailureContract, RepairAction, failure
from contracts.gates import GateEnvelope, awaits_gates
from contracts.operations import Operation

HINT_MESSAGES = 5  # messages quoted in a retry hint; the rest are in the run's gates


def gates_failure(envelope: GateEnvelope, operations: Sequence[Operation]) -> FailureContract:
    """The failure contract of a run whose committed scene failed ``envelope``'s gates."""
    said = "; ".join(envelope.messages[:HINT_MESSAGES]) or "a guardian failed closed"
    more = len(envelope.messages) - HINT_MESSAGES
    hint = (
        f"Fix what the gates report and run again ({', '.join(envelope.failed_gates)}): {said}"
        + (f" (and {more} more)" if more > 0 else "")
    )
    return failure("GATES_FAILED", hint, repair=_repair(envelope, operations))


# The gate a run fails when its answer required verification and no guardian judged it.
UNVERIFIED_GATE = "GATES_NOT_RUN"


def unverified(executed: Executed, planned: Planned | None) -> tuple[FailureContract, str] | None:
    """004 §7: ``done`` is not accepted unless the required gates pass. A plan whose 004
    response set ``meta.requires_gate_verification`` and whose execution no guardian could
    judge (no committed, inspected revision) fails closed: the contract and its message;
    None when nothing required the gates or they will judge the execution."""
    if planned is None or not planned.requires_gate_verification:
        return None
    if executed.failure is not None or awaits_gates(executed):
        return None
    message = (
        f"the answer required gate verification (meta.requires_gate_verification), and no "
        f"gate could judge scene {executed.scene_id}: the run left no inspected revision"
    )
    hint = (
        f"{UNVERIFIED_GATE}: change the scene so a revision is committed, or answer with "
        "meta.requires_gate_verification false when nothing needs verifying"
    )
    return failure("GATES_FAILED", hint, recoverable=False), message


def _repair(
    envelope: GateEnvelope, operations: Sequence[Operation]
) -> list[tuple[str, RepairAction]]:
    """The operations whose arguments name something a gate's message names."""
    text = " ".join(envelope.messages)
    named: list[tuple[str, RepairAction]] = []
    for op in operations:
        names = _names(op.args)
        if any(f"'{n}'" in text or f'"{n}"' in text or f" {n} " in f" {text} " for n in names):
            named.append((op.operation_id, "replace_args"))
    return named


def _names(args: object) -> set[str]:
    """Every string value in ``args`` that could be a name (an object, a modifier, ...)."""
    found: set[str] = set()
    if isinstance(args, dict):
        for value in args.values():
            found |= _names(value)
    elif isinstance(args, list):
        for value in args:
            found |= _names(value)
    elif isinstance(args, str) and 0 < len(args) <= 63:
        found.add(args)
    return found


def envelope_text(envelope: GateEnvelope) -> str:
    """The envelope as the model gets it: 004 §8's JSON, compact."""
    return json.dumps(
        {
            "success": envelope.success,
            "failed_gates": envelope.failed_gates,
            "messages": envelope.messages,
        },
        separators=(",", ":"),
    )
