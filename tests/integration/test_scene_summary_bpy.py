"""``blendmesh/scene.summary`` in a real bpy: what planners are told of the scene, read from
the digest cache, is exactly what summarising the ``scene.snapshot`` tool's data gives,
for a scene with materials, modifiers and rotations, after an edit too; and a scene id
outside its limits is refused before anything is read."""

from __future__ import annotations

import pytest

from tests.support.bridges import SERVER_PRELUDE, script_result

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

SCRIPT = (
    SERVER_PRELUDE
    + """
from contracts.scenes import summarize
import msgspec
MEASURED = ("dimensions", "world_location", "world_bounds")
rpc = answer
def call(tool, **arguments):
    return rpc("tools/call", name=tool, arguments=arguments)
call("object.create", primitive="cube", name="Desk", location=[1, 2, 0.5])
call("object.create", primitive="uv_sphere", name="Ball", rotation=[0.5, 0, 1.0])
call("modifier.add", object="Desk", type="BEVEL")
call("material.assign", object="Ball", material="Red", base_color=[1, 0, 0, 1])
found = {}
for step in ("made", "moved"):
    if step == "moved":
        call("object.transform", name="Desk", location=[4, 0, 0])
    got = msgspec.to_builtins(rpc("blendmesh/scene.summary", scene_id="desk-1").result)
    snap = rpc("tools/call", name="scene.snapshot", arguments={}).result.structured_content.data
    want = msgspec.to_builtins(summarize("desk-1", snap))
    # The world placement is measured afresh by the bridge; the snapshot carries none.
    def cached(summary):
        return {**summary, "objects": [
            {k: v for k, v in o.items() if k not in MEASURED} for o in summary["objects"]]}
    found[step] = {"same": cached(got) == cached(want), "got": got}
bad = rpc("blendmesh/scene.summary", scene_id="")
found["refused"] = msgspec.to_builtins(bad.error) if hasattr(bad, "error") else None
print("RESULT", json.dumps(found))
"""
)


async def test_summary_when_asked_of_the_bridge_equals_the_snapshots_summary() -> None:
    found, _ = await script_result(SCRIPT)
    for step in ("made", "moved"):
        assert found[step]["same"], (step, found[step]["got"])
    made, moved = found["made"]["got"], found["moved"]["got"]
    assert [o["name"] for o in made["objects"]] == ["Ball", "Desk"]
    assert made["objects"][1]["modifiers"] == ["Bevel:BEVEL"]
    assert made["objects"][0]["materials"] == ["Red"] and made["materials"][0]["name"] == "Red"
    assert moved["objects"][1]["location"] == [4.0, 0.0, 0.0]
    # Desk is Blender's 2 m cube with a bevel, measured in world space where it stands.
    assert made["objects"][1]["dimensions"] == [2.0, 2.0, 2.0]
    assert made["objects"][1]["world_bounds"] == [[0.0, 1.0, -0.5], [2.0, 3.0, 1.5]]
    assert moved["objects"][1]["world_location"] == [4.0, 0.0, 0.0]
    assert made["scene_hash"] != moved["scene_hash"] and moved["scene_id"] == "desk-1"
    assert found["refused"] is not None and "scene_id" in found["refused"]["message"], found
