"""The vertex positions the scene hash reads come from the ``position`` attribute in one
block; they are the very values ``mesh.vertices[...].co`` gives, for an edited mesh, an
empty one and one after a modifier was applied, so no scene hash changed with the way."""

from __future__ import annotations

import pytest

from tests.support.bridges import script_result

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

SCRIPT = """
import json, bpy, numpy as np
from services.bridge.scene import fingerprint
from services.bridge.tools import scene
scene.reset()
bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=3)
ball = bpy.context.object
ball.data.vertices[5].co = (-0.0, 1.25, -3.5)
bpy.ops.mesh.primitive_cube_add()
cube = bpy.context.object
cube.modifiers.new("Sub", "SUBSURF")
bpy.ops.object.modifier_apply(modifier="Sub")
empty = bpy.data.meshes.new("Nothing")
found = {}
for mesh in (ball.data, cube.data, empty):
    slow = [c for v in mesh.vertices for c in v.co]
    fast = fingerprint.positions(mesh)
    found[mesh.name] = {
        "same": fast.dtype == np.float32 and fast.tolist() == np.float32(slow).tolist(),
        "count": len(fast) // 3,
        "has_attribute": mesh.attributes.get("position") is not None,
    }
print("RESULT", json.dumps(found))
"""


async def test_positions_when_read_from_the_attribute_equal_each_vertex_co() -> None:
    found, _ = await script_result(SCRIPT)
    assert found["Icosphere"] == {"same": True, "count": 162, "has_attribute": True}
    assert found["Cube"]["same"] and found["Cube"]["count"] == 26
    assert found["Nothing"]["same"] and found["Nothing"]["count"] == 0
