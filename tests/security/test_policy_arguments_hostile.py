"""The policy's argument check on numbers and names no plan should carry (findings B, E).

The planner refuses these first; the policy must still decide them, never crash on them:
an exception here dead-letters the message and leaves the run in `planning` for ever.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from contracts.events import Denied, PolicyDecided
from services.policy.arguments import unsafe_argument
from tests.unit.test_handlers import plan_event, policy

HUGE_INT = int("9" * 400)


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ({"location": [0, HUGE_INT, 0]}, "argument 'location[1]' is too large"),
        ({"scale": [HUGE_INT, 1, 1]}, "argument 'scale[0]' is too large"),
        ({"properties": {"count": -HUGE_INT}}, "argument 'properties.count' is too large"),
        ({"location": [0, 0, math.inf]}, "argument 'location[2]' is not a finite number"),
        ({"name": "A\x00B"}, "argument 'name' contains a control character (U+0000)"),
        ({"object": "tab\there"}, "argument 'object' contains a control character (U+0009)"),
    ],
)
def test_unsafe_argument_when_hostile_names_argument_without_raising(
    tmp_path: Path, args: dict[str, Any], named: str
) -> None:
    problem = unsafe_argument(args, tmp_path)
    assert problem is not None and named in problem


async def test_policy_when_400_digit_int_denies_instead_of_overflowing() -> None:
    planned = plan_event("object.create", args={"primitive": "cube", "location": [HUGE_INT, 0, 0]})
    decided, denied = await policy().on_planned(planned)
    assert isinstance(decided, PolicyDecided) and isinstance(denied, Denied)
    assert "'location[0]' is too large" in denied.message
    assert [(s.operation_id, s.action) for s in denied.failure.minimal_repair_plan] == [
        ("op0", "replace_args")
    ]
