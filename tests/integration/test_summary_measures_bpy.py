"""The summary's world measures in a real bpy: an object whose world matrix, bound box and
dimensions read as they did at the last summary gets that summary's measures back, and
any other is measured again, so the measures always equal measuring everything afresh.
A parent's move changes its child's measures though the child's own entry is unchanged:
the child is measured again, and an object nothing touched is not."""

from __future__ import annotations

import pytest

from tests.support.bridges import SERVER_PRELUDE, script_result

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

# The prelude, and a tool call that must succeed.
PRELUDE = (
    SERVER_PRELUDE
    + """
def call(tool, **arguments):
    result = answer("tools/call", name=tool, arguments=arguments).result.structured_content
    assert result.ok, result
"""
)

SCRIPT = (
    PRELUDE
    + """
import msgspec
from services.bridge.scene import measures
from services.bridge.scene.measures import Measures
call("object.create", primitive="cube", name="Table", location=[1, 0, 0])
call("object.create", primitive="cube", name="Cup", location=[1, 0, 2], scale=[0.2, 0.2, 0.2])
call("object.create", primitive="cube", name="Chair", location=[-3, 0, 0])
call("object.parent", child="Cup", parent="Table")
found = {}
def summary(step):
    before = measures.MEASURES.computed
    got = answer("blendmesh/scene.summary", scene_id="room").result
    objects = {o.name: msgspec.to_builtins(o) for o in got.objects}
    # The same objects measured by a fresh instance, which remembers nothing.
    fresh = Measures().measured([msgspec.structs.replace(o, dimensions=None,
        world_location=None, world_bounds=None) for o in got.objects])
    found[step] = {
        "computed": measures.MEASURES.computed - before,
        "same_as_fresh": [msgspec.to_builtins(o) for o in fresh] == list(objects.values()),
        "objects": objects,
    }
summary("first")
summary("again")
call("object.transform", name="Table", location=[5, 0, 0])
summary("parent moved")
call("modifier.add", object="Chair", type="SOLIDIFY")
summary("modifier")
call("object.delete", name="Chair")
summary("deleted")
print("RESULT", json.dumps(found))
"""
)


async def test_measures_when_nothing_moved_are_kept_and_always_equal_fresh_ones() -> None:
    found, _ = await script_result(SCRIPT)
    for step, seen in found.items():
        assert seen["same_as_fresh"], (step, seen)
    assert found["first"]["computed"] == 3
    assert found["again"]["computed"] == 0
    assert found["again"]["objects"] == found["first"]["objects"]
    # The table and its cup, which follows it; not the chair.
    assert found["parent moved"]["computed"] == 2
    cup = found["parent moved"]["objects"]["Cup"]
    assert cup["world_location"] == [5.0, 0.0, 2.0]
    assert found["parent moved"]["objects"]["Chair"] == found["first"]["objects"]["Chair"]
    assert found["modifier"]["computed"] == 1
    assert "Chair" not in found["deleted"]["objects"]
    assert found["deleted"]["computed"] == 0


UNEVALUATED = (
    PRELUDE
    + """
import bpy, msgspec
from services.bridge.inspection.inspect import inspect
call("object.create", primitive="cube", name="Seen", location=[4, 0, 0])
call("object.create", primitive="cube", name="Disabled", location=[1, 2, 3])
call("object.visibility", name="Disabled", viewport=False)
call("object.create", primitive="cube", name="Excluded", location=[5, 6, 7])
call("collection.create", name="Stored")
call("collection.move", objects=["Excluded"], collection="Stored")
# As an artist unticks a collection in the outliner: no tool does it, a file may.
bpy.context.view_layer.layer_collection.children["Stored"].exclude = True
got = answer("blendmesh/scene.summary", scene_id="room").result
objects = {o.name: msgspec.to_builtins(o) for o in got.objects}
inspected = {o.name: msgspec.to_builtins(o) for o in inspect().objects}
print("RESULT", json.dumps({"summary": objects, "inspection": inspected}))
"""
)


async def test_measures_when_blender_evaluates_no_object_say_not_measured_not_the_origin() -> None:
    found, _ = await script_result(UNEVALUATED)
    summary, inspection = found["summary"], found["inspection"]
    assert summary["Seen"]["world_location"] == [4.0, 0.0, 0.0]
    assert summary["Seen"]["dimensions"] == [2.0, 2.0, 2.0]
    for name in ("Disabled", "Excluded"):
        # Blender left these at the origin: no number is better than a wrong one.
        assert summary[name]["world_location"] is None, summary[name]
        assert summary[name]["world_bounds"] is None and summary[name]["dimensions"] is None
        assert inspection[name]["world_location"] == [] and inspection[name]["dimensions"] == []
        assert summary[name]["location"] != [0.0, 0.0, 0.0]  # its own transform is kept
    assert inspection["Seen"]["world_location"] == [4.0, 0.0, 0.0]
