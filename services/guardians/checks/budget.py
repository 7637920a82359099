"""The polygon budget: a run does not take the scene over a number of faces.

It judges what a run adds, not the scene it met: a scene already over the budget (an
artist's own file, a budget lowered since) stays editable by runs that add no faces, and
a revision that is a file as a person made it (an import, or a revert to one) is reported,
never failed, for its size (docs/guardians.md; docs/adr/0030).
"""

from __future__ import annotations

from typing import Any

import msgspec

from contracts.inspection import Inspection, decode
from contracts.scene_files import SCENE_TOOLS
from services.guardians.checks.artifact import load, result
from services.guardians.checks.gate_settings import load_gate_settings

HEAVIEST = 3  # objects named in the message, the largest first


def polygon_budget(repo_path: str) -> dict[str, Any]:
    """POLYGON_BUDGET: the evaluated faces of every object (after modifiers and Geometry
    Nodes) add up to at most ``polygon_budget`` of ``gates.json`` (default 1,000,000), or
    the run added none (``faces_before``), or the revision is an imported or reverted file."""
    inspection = load(repo_path)
    settings = load_gate_settings(repo_path)
    budget, before = settings.polygon_budget, settings.faces_before
    faces = faces_of(inspection)
    counts = {"faces": faces, "budget": budget}
    if before is not None:
        counts["faces_before"] = before
    problems: list[str] = []
    if faces > budget and not is_a_file(inspection) and (before is None or faces > before):
        grew = "" if before is None else f" (the run took it from {before})"
        problems.append(
            f"the scene evaluates to {faces} faces{grew}, over the polygon budget of {budget}; "
            f"the heaviest objects: {_heaviest(inspection)}"
        )
    return result("polygon_budget", "POLYGON_BUDGET", problems, **counts)


def evaluated_faces(artifact: bytes) -> int | None:
    """The evaluated faces an inspection artifact counts; None for one that does not
    decode (the revision after it is then judged whole, never waved through)."""
    try:
        inspection = decode(artifact)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return faces_of(inspection)


def faces_of(inspection: Inspection) -> int:
    """The evaluated faces of every object of the revision."""
    return sum(obj.evaluated_faces for obj in inspection.objects)


def is_a_file(inspection: Inspection) -> bool:
    """Whether the revision is a .blend as it was given (an import) or as it was stored (a
    revert): what the file holds is the person's, not a run's doing."""
    run = inspection.run
    # Every operation: a plan that also adds geometry is judged like any other run.
    ops = run.operations if run is not None else []
    return bool(ops) and all(op.tool_name in SCENE_TOOLS for op in ops)


def _heaviest(inspection: Inspection) -> str:
    heaviest = sorted(inspection.objects, key=lambda obj: (-obj.evaluated_faces, obj.name))
    return ", ".join(
        f"{obj.name!r} ({obj.evaluated_faces})"
        for obj in heaviest[:HEAVIEST]
        if obj.evaluated_faces > 0
    )
