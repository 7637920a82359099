"""Unsafe arguments are denied before any policy or approval, naming the argument."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from contracts.events import ApprovalRequested, Denied, PolicyDecided
from services.policy.arguments import unsafe_argument
from tests.unit.test_handlers import plan_event, policy


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ({"filepath": "../../etc/passwd"}, "'filepath' points outside the workspace"),
        ({"filepath": "/etc/passwd"}, "'filepath' points outside the workspace"),
        ({"name": "N" * 64}, "'name' is longer than 63 characters"),
        ({"location": [0.0, float("nan"), 0.0]}, "'location[1]' is not a finite number"),
        ({"scale": [1.0, float("inf"), 1.0]}, "'scale[1]' is not a finite number"),
        ({"location": [0.0, 0.0, 1e7]}, "'location[2]' is out of range"),
        ({"scale": [1.0, 0.0, 1.0]}, "'scale[1]' is out of range"),
        ({"scale": [1.0, 1.0, 2e4]}, "'scale[2]' is out of range"),
    ],
)
def test_unsafe_argument_when_unsafe_names_the_argument(
    tmp_path: Path, args: dict[str, Any], named: str
) -> None:
    problem = unsafe_argument(args, tmp_path)
    assert problem is not None and named in problem


def test_unsafe_argument_when_safe_is_none(tmp_path: Path) -> None:
    args = {
        "name": "N" * 63,
        "location": [1e6, -1e6, 0],
        "scale": [1e4, 0.001, 1],
        "filepath": "renders/a.png",
    }
    assert unsafe_argument(args, tmp_path) is None


@pytest.mark.clause("002-§policy.4")
async def test_policy_when_argument_unsafe_denies_before_asking_for_approval() -> None:
    planned = plan_event("object.delete", args={"name": "N" * 80})
    decided, denied = await policy().on_planned(planned)
    assert isinstance(decided, PolicyDecided) and isinstance(denied, Denied)
    assert not isinstance(denied, ApprovalRequested)
    assert decided.decisions[0].policy_ids == ["blendmesh.args#unsafe-argument"]
    assert denied.failure.error_code == "POLICY_BLOCKED" and denied.failure.recoverable
    assert [(s.operation_id, s.action) for s in denied.failure.minimal_repair_plan] == [
        ("op0", "replace_args")
    ]
    assert "'name' is longer than 63 characters" in denied.message
