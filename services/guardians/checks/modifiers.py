"""Modifiers: every one in every stack evaluates without an error."""

from __future__ import annotations

from typing import Any

from services.guardians.checks.artifact import load, result


def modifiers_evaluate(repo_path: str) -> dict[str, Any]:
    """MODIFIERS_EVALUATE: no modifier reported an error when the scene was evaluated.

    The error is Blender's own text (e.g. a Boolean without an operand, a Geometry Nodes
    group that failed), quoted so a model can fix the modifier it names.
    """
    inspection = load(repo_path)
    problems: list[str] = []
    checked = 0
    for obj in inspection.objects:
        for modifier in obj.modifiers:
            checked += 1
            if modifier.error is not None:
                said = modifier.error.strip() or "(Blender gave no message)"
                problems.append(
                    f"object {obj.name!r} modifier {modifier.name!r} ({modifier.type}) "
                    f"fails to evaluate: {said}"
                )
    return result("modifiers_evaluate", "MODIFIERS_EVALUATE", problems, modifiers_checked=checked)
