"""The object hierarchy: every parent exists and no object is its own ancestor."""

from __future__ import annotations

from typing import Any

from services.guardians.checks.artifact import load, result

_WALKING, _DONE = 1, 2


def hierarchy_valid(repo_path: str) -> dict[str, Any]:
    """HIERARCHY_VALID: no object names a parent the scene lacks, none is parented in a
    cycle. Walked iteratively, so a long chain is measured, never recursed into."""
    inspection = load(repo_path)
    parent_of = {obj.name: obj.parent for obj in inspection.objects}
    problems = [
        f"object {obj.name!r} has parent {obj.parent!r}, which the scene does not have"
        for obj in inspection.objects
        if obj.parent is not None and obj.parent not in parent_of
    ]
    state: dict[str, int] = {}
    for start in parent_of:
        path: list[str] = []
        node: str | None = start
        while node is not None and node in parent_of and node not in state:
            state[node] = _WALKING
            path.append(node)
            node = parent_of[node]
        if node is not None and state.get(node) == _WALKING:
            cycle = path[path.index(node) :]
            if len(cycle) == 1:
                problems.append(f"object {node!r} is its own parent")
            else:
                chain = " -> ".join(repr(name) for name in [*cycle, node])
                problems.append(f"objects are parented in a cycle: {chain}")
        for name in path:
            state[name] = _DONE
    return result("hierarchy_valid", "HIERARCHY_VALID", problems, objects_checked=len(parent_of))
