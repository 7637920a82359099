"""The count of smooth faces the scene hash digests, read from Blender's ``sharp_face``
attribute, equals what each polygon's ``use_smooth`` says in every shading state (a bpy
process of the test's own): the hashes of revisions already stored depend on it."""

from __future__ import annotations

import pytest

from tests.support.bridges import script_result

pytestmark = [pytest.mark.integration, pytest.mark.asyncio, pytest.mark.timeout(120)]

SCRIPT = """
import json
import bpy, numpy as np
from services.bridge.scene.scene_state import smooth_faces
bpy.ops.wm.read_factory_settings(use_empty=True)
def per_polygon(m):
    flags = np.empty(len(m.polygons), dtype=bool)
    m.polygons.foreach_get("use_smooth", flags)
    return int(flags.sum())
seen = []
def check(label, m):
    seen.append([label, smooth_faces(m), per_polygon(m)])
bpy.ops.mesh.primitive_uv_sphere_add()
m = bpy.context.active_object.data
check("new", m)
bpy.ops.object.shade_smooth(); check("smooth", m)
bpy.ops.object.shade_flat(); check("flat", m)
m.polygons[3].use_smooth = True; m.polygons[7].use_smooth = True; check("two", m)
empty = bpy.data.meshes.new("empty"); check("no faces", empty)
built = bpy.data.meshes.new("built")
built.from_pydata([(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0)], [], [(0, 1, 2), (1, 3, 2)])
check("from data", built)
# A user's own attribute of that name, not Blender's boolean face flag.
odd = bpy.data.meshes.new("odd")
odd.from_pydata([(0, 0, 0), (1, 0, 0), (0, 1, 0)], [], [(0, 1, 2)])
odd.polygons[0].use_smooth = True
if odd.attributes.get("sharp_face") is not None:
    odd.attributes.remove(odd.attributes["sharp_face"])
odd.attributes.new("sharp_face", "FLOAT", "POINT")
check("foreign attribute", odd)
print("RESULT", json.dumps(seen))
"""


async def test_smooth_faces_when_read_from_the_attribute_match_each_polygon() -> None:
    seen, _ = await script_result(SCRIPT)
    assert [row[0] for row in seen] == [
        "new", "smooth", "flat", "two", "no faces", "from data", "foreign attribute",
    ]  # fmt: skip
    for label, fast, slow in seen:
        assert fast == slow, label
    assert {row[0]: row[1] for row in seen}["two"] == 2
    assert {row[0]: row[1] for row in seen}["smooth"] > 100
