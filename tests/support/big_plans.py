"""The largest plan a run may hold, as a person laying out a scene would ask for it: a
warehouse aisle of crates, each created, placed, bevelled and painted. The run-view tests
and ``bench/run_view.py`` run it (ADR 0076)."""

from __future__ import annotations

from typing import Any

from contracts.limits import DEFAULT_MAX_OPERATIONS

SHAPES = ("cube", "cylinder", "uv_sphere", "cone")
STEPS = 4  # operations per crate: create, move, bevel, paint


def crate(i: int) -> list[dict[str, Any]]:
    """One crate of a warehouse aisle: created, placed, bevelled and painted, as a person
    laying out a scene asks for it."""
    name = f"Crate_{i:03d}"
    row, col = divmod(i, 25)
    made = f"make_{i:03d}"

    def op(step: str, tool: str, args: dict[str, Any], after: list[str]) -> dict[str, Any]:
        return {
            "operation_id": f"{step}_{i:03d}",
            "tool_name": tool,
            "args": args,
            "depends_on": after,
            "safety_level": "safe_write",
        }

    return [
        op(
            "make",
            "object.create",
            {
                "primitive": SHAPES[i % len(SHAPES)],
                "name": name,
                "location": [col * 2.5, row * 3.0, 0.0],
                "rotation": [0.0, 0.0, (i * 15) % 360],
            },
            [],
        ),
        op(
            "move",
            "object.transform",
            {"name": name, "location": [col * 2.5, row * 3.0, 0.5], "scale": [1.0, 0.8, 1.0]},
            [made],
        ),
        op(
            "bevel",
            "modifier.add",
            {"object": name, "type": "BEVEL", "properties": {"segments": 2, "width": 0.05}},
            [made],
        ),
        op(
            "paint",
            "material.assign",
            {
                "object": name,
                "base_color": [0.35 + (i % 5) * 0.1, 0.25, 0.12],
                "roughness": 0.6,
            },
            [made],
        ),
    ]


def biggest_plan(request_id: str = "req-aisle") -> dict[str, Any]:
    ops = [op for i in range(DEFAULT_MAX_OPERATIONS // STEPS) for op in crate(i)]
    assert len(ops) == DEFAULT_MAX_OPERATIONS
    return {"request_id": request_id, "operations": ops}


def op_ids() -> list[str]:
    """The plan's operation ids, sorted as the audit's actions are."""
    return sorted(op["operation_id"] for op in biggest_plan()["operations"])
