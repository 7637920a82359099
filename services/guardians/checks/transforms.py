"""Transforms: finite, within reach of a float's precision, and no collapsed scale."""

from __future__ import annotations

import math
from typing import Any

from services.guardians.checks.artifact import load, result

# The bounds policy holds a tool's arguments to, so a scene no plan could have asked for
# (a script's doing, or an older file) is caught as well.
MAX_LOCATION = 1e6  # metres; beyond it single-precision geometry visibly jitters
MAX_SCALE = 1e4
AXES = "xyz"


def transforms_sane(repo_path: str) -> dict[str, Any]:
    """TRANSFORMS_SANE: location, rotation, scale and dimensions are 3 finite numbers;
    |location| <= ``MAX_LOCATION``; scale is never 0 and |scale| <= ``MAX_SCALE``
    (a negative scale mirrors, which is allowed). A vector the artifact leaves empty is
    not checked."""
    inspection = load(repo_path)
    problems: list[str] = []
    for obj in inspection.objects:
        vectors = {
            "location": obj.location,
            "rotation_euler": obj.rotation_euler,
            "scale": obj.scale,
            "dimensions": obj.dimensions,
        }
        for field, vector in vectors.items():
            if not vector:
                continue
            if len(vector) != len(AXES):
                problems.append(f"object {obj.name!r} {field} has {len(vector)} components, not 3")
                continue
            if _sane(field, vector):
                continue
            for axis, value in zip(AXES, vector, strict=True):
                problem = _problem(field, value)
                if problem is not None:
                    problems.append(f"object {obj.name!r} {field}.{axis} {problem}")
    return result(
        "transforms_sane",
        "TRANSFORMS_SANE",
        problems,
        objects_checked=len(inspection.objects),
    )


def _sane(field: str, vector: list[float]) -> bool:
    """The common case, in loops that run in C (a scene of 1000 objects has 12000 values):
    every value finite and within its bound. False sends the vector to ``_problem``."""
    if not all(map(math.isfinite, vector)):
        return False
    if field == "location":
        return max(map(abs, vector)) <= MAX_LOCATION
    if field == "scale":
        return 0 not in vector and max(map(abs, vector)) <= MAX_SCALE
    return True


def _problem(field: str, value: float) -> str | None:
    if not math.isfinite(value):
        return f"is {value}, not a finite number"
    if field == "location" and abs(value) > MAX_LOCATION:
        return f"is {value:g}, beyond ±{MAX_LOCATION:g}"
    if field == "scale" and value == 0:
        return "is 0: the object collapses to nothing"
    if field == "scale" and abs(value) > MAX_SCALE:
        return f"is {value:g}, beyond ±{MAX_SCALE:g}"
    return None
