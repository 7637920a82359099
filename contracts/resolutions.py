"""How a person answers an approval: the resolutions a door may publish (with spec 002's
alias), and how the code of a Python step is named when a person approves it."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

Resolution = Literal[
    "approve_once", "approve_and_always_allow", "reject", "approve_and_always_allow_recipient"
]
# Spec 002 §7 names the standing approval after its mail tools' recipient; blendmesh keys it
# by tool and scene (docs/adr/0020), so the spec's string is accepted as an alias. Doors
# publish the canonical name; policy reads either.
RESOLUTION_ALIASES: dict[str, Resolution] = {
    "approve_and_always_allow_recipient": "approve_and_always_allow"
}


def canonical_resolution(decision: Resolution) -> Resolution:
    """``decision`` under blendmesh's own name (the alias of 002 §7 becomes its canonical)."""
    return RESOLUTION_ALIASES.get(decision, decision)


# How a Python step's code is named wherever a person approves it (contracts.python_steps).
CodeHash = Annotated[str, msgspec.Meta(pattern=r"^sha256:[0-9a-f]{64}$")]
