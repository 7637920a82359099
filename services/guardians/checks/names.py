"""Names: unique within their kind, within Blender's length, free of control characters."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from typing import Any

from services.guardians.checks.artifact import load, result

# Blender keeps an ID's or a modifier's name in 64 bytes with the NUL: 63 bytes of UTF-8,
# so a 63-character name of accented letters is already cut.
MAX_NAME_BYTES = 63


def names_valid(repo_path: str) -> dict[str, Any]:
    """NAMES_VALID: object, material and node-group names, and each object's modifier
    names, are non-empty, at most ``MAX_NAME_BYTES`` bytes, hold no control character
    and appear once within their kind."""
    inspection = load(repo_path)
    kinds: list[tuple[str, list[str]]] = [
        ("object", [obj.name for obj in inspection.objects]),
        ("material", [material.name for material in inspection.materials]),
        ("node group", [group.name for group in inspection.node_groups]),
    ]
    kinds += [
        (f"modifier of object {obj.name!r}", [modifier.name for modifier in obj.modifiers])
        for obj in inspection.objects
    ]
    problems: list[str] = []
    for kind, names in kinds:
        problems += _problems(kind, names)
    checked = sum(len(names) for _, names in kinds)
    return result("names_valid", "NAMES_VALID", problems, names_checked=checked)


def _problems(kind: str, names: Iterable[str]) -> list[str]:
    problems: list[str] = []
    seen: set[str] = set()
    repeated: set[str] = set()
    for name in names:
        if name in seen:
            if name not in repeated:
                repeated.add(name)
                problems.append(f"{kind} name {name!r} is used more than once")
            continue
        seen.add(name)
        if not name:
            problems.append(f"a {kind} has an empty name")
        elif len(name.encode()) > MAX_NAME_BYTES:
            problems.append(f"{kind} name {name!r} is longer than Blender's {MAX_NAME_BYTES} bytes")
        if (control := _control(name)) is not None:
            problems.append(f"{kind} name {name!r} holds the control character {control}")
    return problems


def _control(name: str) -> str | None:
    for char in name:
        if unicodedata.category(char) == "Cc":
            return f"U+{ord(char):04X}"
    return None
