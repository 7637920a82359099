"""What Blender makes of a primitive when nothing more is said: its name and its size.

Plain data, no Blender: the tool bodies name and check what they build by it, and the
offline planner reads the same table to name, size and place what a plan makes, so the two
cannot drift apart (the tools run in the mesh's Blender and in the artist's, ADR 0047).
"""

from __future__ import annotations

# Blender's default object name for each primitive.
DEFAULT_NAMES: dict[str, str] = {
    "cube": "Cube",
    "uv_sphere": "Sphere",
    "ico_sphere": "Icosphere",
    "cylinder": "Cylinder",
    "cone": "Cone",
    "plane": "Plane",
    "torus": "Torus",
    "monkey": "Suzanne",
}

# Each primitive's size along x, y, z as built at scale 1 (Blender's Add-menu defaults);
# a 0 marks an axis the primitive is flat along.
DEFAULT_SIZES: dict[str, tuple[float, float, float]] = {
    "cube": (2, 2, 2),
    "uv_sphere": (2, 2, 2),
    "ico_sphere": (2, 2, 2),
    "cylinder": (2, 2, 2),
    "cone": (2, 2, 2),
    "plane": (2, 2, 0),
    "torus": (2.5, 2.5, 0.5),
    "monkey": (2.7344, 1.7032, 1.9688),
}
