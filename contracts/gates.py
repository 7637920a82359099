"""The verification gate envelope of spec 004 §8: what the guardians say of a revision.

A run is completed only when its gates pass; when they fail, this envelope goes back to a
planner that can repair (the model's next iteration) or ends the run ``GATES_FAILED``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:  # events imports this module for GateEnvelope
    from contracts.events import Executed


class GateEnvelope(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """004 §8: whether every gate passed, which failed, and why, in words a model can use."""

    success: bool
    failed_gates: list[str] = []
    messages: list[str] = []


def awaits_gates(executed: Executed) -> bool:
    """Whether the guardians judge this execution before its run may complete: it ran
    without a failure and left a committed revision with an inspection artifact. The
    guardians and the planner both decide by this one rule, so neither waits for the other
    in vain."""
    return executed.failure is None and executed.inspection is not None
