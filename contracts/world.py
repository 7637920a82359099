"""Where objects are in the world, from the transforms a snapshot keeps (pure, no bpy).

A snapshot (and a summary of it) gives each object's location in its parent's space:
"where is the cap?" answered with that says 1.3 for a cap whose world height is 0.775.
The world location composes the chain the way Blender does: the parent's world matrix,
then the parent inverse kept at parenting time, then the object's own location, XYZ
Euler rotation and scale.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

Matrix = list[list[float]]
IDENTITY: Matrix = [[1.0 if i == j else 0.0 for j in range(4)] for i in range(4)]


def _times(a: Matrix, b: Matrix) -> Matrix:
    return [[sum(a[i][k] * b[k][j] for k in range(4)) for j in range(4)] for i in range(4)]


def local_matrix(
    location: Sequence[float], rotation: Sequence[float], scale: Sequence[float]
) -> Matrix:
    """Translation @ Rz @ Ry @ Rx @ scale: Blender's XYZ Euler (radians)."""
    (cx, cy, cz), (sx, sy, sz) = ([math.cos(a) for a in rotation], [math.sin(a) for a in rotation])
    rot = [
        [cy * cz, sx * sy * cz - cx * sz, cx * sy * cz + sx * sz],
        [cy * sz, sx * sy * sz + cx * cz, cx * sy * sz - sx * cz],
        [-sy, sx * cy, cx * cy],
    ]
    return [
        [rot[i][0] * scale[0], rot[i][1] * scale[1], rot[i][2] * scale[2], location[i]]
        for i in range(3)
    ] + [[0.0, 0.0, 0.0, 1.0]]


def world_locations(objects: Sequence[Mapping[str, Any]]) -> dict[str, list[float]]:
    """Each snapshot object's world location (rounded), by name. Chains are followed
    without recursion, each object composed once; a parent cycle (which Blender refuses,
    but a file may hold) is cut where it closes."""
    by_name = {o["name"]: o for o in objects}
    worlds: dict[str, Matrix] = {}
    for name in by_name:
        chain: list[str] = []
        seen: set[str] = set()
        at: str | None = name
        while at is not None and at not in worlds and at not in seen:
            chain.append(at)
            seen.add(at)
            parent = by_name[at].get("parent")
            at = parent if parent in by_name else None
        above = worlds[at] if at is not None and at in worlds else None
        for link in reversed(chain):
            entry = by_name[link]
            own = local_matrix(
                entry.get("location", [0, 0, 0]),
                entry.get("rotation", [0, 0, 0]),
                entry.get("scale", [1, 1, 1]),
            )
            if above is not None:
                own = _times(_times(above, entry.get("parent_inverse") or IDENTITY), own)
            worlds[link] = above = own
    return {name: [round(worlds[name][i][3], 4) + 0.0 for i in range(3)] for name in by_name}
