"""Argument safety checks, run before any policy or approval (spec 002 §6).

A plan that passes the tool schemas can still carry arguments no person should be asked
to approve: NaN, absurd coordinates, names that Blender would truncate, or paths that
leave the workspace. Each check names the argument so a planner can replace it.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any

from contracts.limits import argument_problem

MAX_NAME = 63  # Blender truncates longer ID names
MAX_LOCATION = 1e6
MAX_SCALE = 1e4
PATH_HINTS = ("path", "file", "dir")
NAME_KEYS = ("name", "new_name", "object", "material", "target")


def _numbers(value: Any, where: str) -> list[tuple[str, float]]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int | float):
        return [(where, float(value))]
    if isinstance(value, dict):
        return [n for k, v in value.items() for n in _numbers(v, f"{where}.{k}")]
    if isinstance(value, list | tuple):
        return [n for i, v in enumerate(value) for n in _numbers(v, f"{where}[{i}]")]
    return []


def _path_problem(key: str, value: str, workspace: Path) -> str | None:
    if "\x00" in value:
        return f"argument {key!r} contains a NUL byte"
    candidate = Path(value)
    if not candidate.is_absolute():
        candidate = workspace / PurePosixPath(value)
    root = workspace.resolve()
    resolved = candidate.resolve()
    if resolved != root and root not in resolved.parents:
        return f"argument {key!r} points outside the workspace"
    return None


def unsafe_argument(args: dict[str, Any], workspace: Path) -> str | None:
    """Why the arguments are unsafe, naming the argument; None when they are fine."""
    # Numbers no float holds, control characters and deep nesting first: the checks
    # below convert every number to float and recurse into the args.
    unusable = argument_problem(args)
    if unusable:
        return unusable
    for key, value in args.items():
        lowered = key.lower()
        if isinstance(value, str):
            if lowered in NAME_KEYS and len(value) > MAX_NAME:
                return f"argument {key!r} is longer than {MAX_NAME} characters"
            if any(hint in lowered for hint in PATH_HINTS):
                problem = _path_problem(key, value, workspace)
                if problem:
                    return problem
        if lowered == "location":
            for where, number in _numbers(value, key):
                if abs(number) > MAX_LOCATION:
                    return (
                        f"argument {where!r} is out of range (|value| must be <= {MAX_LOCATION:g})"
                    )
        if lowered == "scale":
            for where, number in _numbers(value, key):
                if not 0 < number <= MAX_SCALE:
                    return f"argument {where!r} is out of range (must be > 0 and <= {MAX_SCALE:g})"
    return None
