"""Python steps: trusted code runs only with a person's approval on record."""

from __future__ import annotations

from typing import Any

from services.guardians.checks.artifact import load, result

# RunRecord.approved_by says "policy" when no person was asked; 004 §5 wants a person
# to confirm trusted code, so a policy decision does not count as that approval.
POLICY = "policy"


def python_approved(repo_path: str) -> dict[str, Any]:
    """PYTHON_APPROVED: every Python step run in ``trusted`` mode names who approved its
    exact code, and that is a person, not ``policy``. A revision no run made (no run
    record) ran no Python and passes."""
    inspection = load(repo_path)
    steps = inspection.run.python_steps if inspection.run is not None else []
    problems: list[str] = []
    trusted = 0
    for step in steps:
        if step.mode != "trusted":
            continue
        trusted += 1
        what = f"operation {step.operation_id!r} ran trusted Python (sha256 {step.code_sha256})"
        approver = (step.approved_by or "").strip()
        if not approver:
            problems.append(f"{what} with no approval on record")
        elif approver == POLICY:
            problems.append(f"{what} approved by policy alone: trusted code needs a person")
    return result(
        "python_approved", "PYTHON_APPROVED", problems, python_steps=len(steps), trusted=trusted
    )
