"""Caps on the modifier properties that multiply geometry, as JSON-schema maxima.

Blender's hard limits are for a person at a desk: an ARRAY count may reach 2**31 - 1 and
subdivision 11 levels, either of which takes the bridge to gigabytes. The caps sit in
the tools' schemas, so the planner refuses an operation over one with ARGS_INVALID
before anything runs, and the bridge refuses it again if it is called directly.

``modifier.set`` names a modifier, not its type, so a cap applies to the property name
whatever the modifier; among the supported types each name below means one thing.
"""

from __future__ import annotations

from typing import Any

PROPERTY_CAPS: dict[str, tuple[int, str]] = {
    "count": (1000, "ARRAY copies"),
    "levels": (6, "SUBSURF viewport levels (each multiplies the faces by 4)"),
    "render_levels": (6, "SUBSURF render levels (each multiplies the faces by 4)"),
    "segments": (100, "BEVEL segments"),
    "steps": (256, "SCREW viewport steps"),
    "render_steps": (256, "SCREW render steps"),
    "iterations": (100, "SCREW, SMOOTH and DECIMATE iterations"),
    "octree_depth": (10, "REMESH octree depth (each doubles the resolution)"),
}


def capped_properties() -> dict[str, Any]:
    """The ``properties`` keyword of a modifier-properties schema: one maximum per cap.

    Only the maximum is given: the type of every value is checked against Blender's own
    property definition when the tool runs.
    """
    return {
        name: {"maximum": cap, "description": f"{what}; at most {cap}"}
        for name, (cap, what) in PROPERTY_CAPS.items()
    }


# The same limits for the Geometry Nodes inputs that multiply geometry, checked by
# gn.set_input (socket values are not in any schema: one tool sets every node's inputs).
# A value linked in from another node is not capped: the group is only evaluated later.
SOCKET_CAPS: dict[tuple[str, str], tuple[int, str]] = {
    ("GeometryNodeSubdivisionSurface", "Level"): (6, "each level multiplies the faces by 4"),
    ("GeometryNodeSubdivideMesh", "Level"): (6, "each level multiplies the faces by 4"),
    ("GeometryNodeMeshGrid", "Vertices X"): (1000, "grid vertices along X"),
    ("GeometryNodeMeshGrid", "Vertices Y"): (1000, "grid vertices along Y"),
}
