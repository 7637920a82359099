"""The polygon budget: the evaluated scene stays within a number of faces."""

from __future__ import annotations

from typing import Any

from services.guardians.checks.artifact import load, result
from services.guardians.checks.gate_settings import load_gate_settings

HEAVIEST = 3  # objects named in the message, the largest first


def polygon_budget(repo_path: str) -> dict[str, Any]:
    """POLYGON_BUDGET: the evaluated faces of every object (after modifiers and Geometry
    Nodes) add up to at most ``polygon_budget`` of ``gates.json`` (default 1,000,000)."""
    inspection = load(repo_path)
    budget = load_gate_settings(repo_path).polygon_budget
    faces = sum(obj.evaluated_faces for obj in inspection.objects)
    problems: list[str] = []
    if faces > budget:
        heaviest = sorted(inspection.objects, key=lambda obj: (-obj.evaluated_faces, obj.name))
        named = ", ".join(
            f"{obj.name!r} ({obj.evaluated_faces})"
            for obj in heaviest[:HEAVIEST]
            if obj.evaluated_faces > 0
        )
        problems.append(
            f"the scene evaluates to {faces} faces, over the polygon budget of {budget}; "
            f"the heaviest objects: {named}"
        )
    return result("polygon_budget", "POLYGON_BUDGET", problems, faces=faces, budget=budget)
