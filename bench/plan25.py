"""The benchmark workload: a 20-object scene and a 25-operation plan that can run again
and again on it (every modifier it adds it removes again, transforms are absolute)."""

from __future__ import annotations

from typing import Any

OBJECTS = 20


def op(
    op_id: str, tool: str, args: dict[str, Any], deps: list[str] | None = None
) -> dict[str, Any]:
    return {
        "operation_id": op_id,
        "tool_name": tool,
        "args": args,
        "depends_on": deps or [],
        "safety_level": "read_only" if tool == "scene.snapshot" else "safe_write",
    }


def setup_plan(objects: int = OBJECTS, first: int = 0) -> dict[str, Any]:
    """Create objects ``first`` .. ``objects - 1`` (``Obj00``, ``Obj01``, ...), in a grid."""
    prims = ["cube", "uv_sphere", "ico_sphere", "cylinder", "cone", "plane", "torus", "monkey"]
    return {
        "request_id": f"bench-setup-{first}",
        "operations": [
            op(
                f"s{i:02d}",
                "object.create",
                {
                    "primitive": prims[i % len(prims)],
                    "name": f"Obj{i:02d}",
                    "location": [i % 40 * 2.0, i // 40 * 2.0, 0.0],
                },
            )
            for i in range(first, objects)
        ],
    }


def setup_plans(objects: int, per_plan: int = 250) -> list[dict[str, Any]]:
    """The setup of an ``objects``-object scene, split into plans a mesh accepts."""
    return [
        setup_plan(min(first + per_plan, objects), first) for first in range(0, objects, per_plan)
    ]


def plan25(iteration: int) -> dict[str, Any]:
    """10 transforms, 5 material assignments, 5 modifier adds and the 5 removes after them."""
    ops = []
    for i in range(10):
        ops.append(
            op(
                f"t{i:02d}",
                "object.transform",
                {
                    "name": f"Obj{i:02d}",
                    "location": [i * 2.0, float(iteration % 7), 0.0],
                    "rotation": [0.0, 0.0, float(iteration % 90)],
                },
            )
        )
    for i in range(5):
        ops.append(
            op(
                f"m{i:02d}",
                "material.assign",
                {
                    "object": f"Obj{10 + i:02d}",
                    "base_color": [0.1 * i, 0.5, 0.2],
                    "roughness": (iteration % 10) / 10,
                },
            )
        )
    for i in range(5):
        target = f"Obj{15 + i:02d}"
        ops.append(
            op(
                f"a{i:02d}",
                "modifier.add",
                {"object": target, "type": "BEVEL", "properties": {"width": 0.05}},
            )
        )
        ops.append(
            op(f"r{i:02d}", "modifier.remove", {"object": target, "name": "Bevel"}, [f"a{i:02d}"])
        )
    return {"request_id": f"bench-{iteration}", "operations": ops}
