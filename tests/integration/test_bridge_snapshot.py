"""The snapshot and the scene hash a tool call answers with both come from the digest cache
(ADR 0012): ``scene.snapshot`` must equal the snapshot described afresh, and a writing
tool's ``ToolResult.scene_hash`` must equal what ``blendmesh/scene.fingerprint`` answers
right after it. Real bpy in a real bridge process.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from contracts.bridge import FullSnapshot, ToolResult
from services.executor.adapters.bridge_client import BridgeProcess
from tests.support.bridges import bridge_fixtures, call, ok, script_result

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(120),
]

shared_bridge, bridge = bridge_fixtures()


async def build_varied_scene(bridge: BridgeProcess) -> None:
    """Every kind of cached entry: objects, a material, a node group, the scene part."""
    await ok(bridge, "object.create", primitive="cube", name="A", location=[1, 2, 3])
    await ok(bridge, "object.create", primitive="monkey", name="B")
    await ok(bridge, "material.assign", object="A", material="M1", roughness=0.3)
    await ok(bridge, "modifier.add", object="B", type="NODES")
    await ok(bridge, "camera.create", name="Cam", look_at_object="A")
    await ok(bridge, "collection.create", name="Col")
    await ok(bridge, "collection.move", objects=["B"], collection="Col")
    await ok(bridge, "keyframe.insert", name="A", property="location", frame=3)
    await ok(bridge, "object.parent", child="B", parent="A")


async def full_snapshot(bridge: BridgeProcess) -> dict[str, object]:
    return (await bridge.request("blendmesh/scene.snapshot_full", FullSnapshot)).data


async def test_scene_snapshot_when_the_scene_changes_equals_the_full_snapshot(
    bridge: BridgeProcess,
) -> None:
    await build_varied_scene(bridge)
    cached = (await ok(bridge, "scene.snapshot")).data
    assert cached is not None and {"objects", "materials", "node_groups"} <= set(cached)
    assert cached == await full_snapshot(bridge)
    assert cached["hash"] == await bridge.fingerprint_full()
    await ok(bridge, "object.transform", name="A", location=[4, 5, 6])
    await ok(bridge, "object.rename", name="B", new_name="C")
    after = (await ok(bridge, "scene.snapshot")).data
    assert after == await full_snapshot(bridge)
    assert after is not None and after["hash"] != cached["hash"]
    # The lists come in the order the full snapshot has always given them: by name.
    assert [o["name"] for o in after["objects"]] == ["A", "C", "Cam"]


async def test_scene_snapshot_full_when_asked_leaves_the_cache_as_it_is(
    bridge: BridgeProcess,
) -> None:
    await build_varied_scene(bridge)
    before = await bridge.fingerprint()
    assert (await full_snapshot(bridge))["hash"] == before
    assert await bridge.fingerprint() == before


@pytest.mark.clause("001-§snapshots.1", "001-§verify.1")
async def test_tool_result_when_a_tool_writes_carries_the_scene_hash_after_it(
    bridge: BridgeProcess,
) -> None:
    created = await ok(bridge, "object.create", primitive="cube", name="A")
    assert created.scene_hash == await bridge.fingerprint()
    moved = await ok(bridge, "object.transform", name="A", location=[1, 0, 0])
    assert moved.scene_hash is not None and moved.scene_hash != created.scene_hash
    assert moved.scene_hash == await bridge.fingerprint() == await bridge.fingerprint_full()


async def test_tool_result_when_a_writer_fails_unchanged_carries_the_unchanged_hash(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="A")
    before = await bridge.fingerprint()
    missing = await call(bridge, "object.transform", name="Ghost", location=[1, 1, 1])
    assert (missing.ok, missing.mutated, missing.scene_hash) == (False, False, before)
    invalid = await call(bridge, "object.transform", name="A", location="up")
    assert (invalid.error_code, invalid.scene_hash) == ("invalid_input", before)
    assert await bridge.fingerprint() == before


async def test_tool_result_when_a_writer_fails_after_changing_carries_the_new_hash(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="A")
    before = await bridge.fingerprint()
    result = await call(
        bridge, "modifier.add", object="A", type="BEVEL", properties={"segments": "lots"}
    )
    assert (result.ok, result.mutated) == (False, True)
    # The partial modifier is still there: the hash is of what the call left behind.
    assert result.scene_hash is not None and result.scene_hash != before
    assert result.scene_hash == await bridge.fingerprint() == await bridge.fingerprint_full()


async def test_tool_result_when_a_tool_only_reads_or_is_unknown_has_no_scene_hash(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="A")
    assert (await ok(bridge, "scene.snapshot")).scene_hash is None
    assert (await call(bridge, "no.such_tool")).scene_hash is None


async def test_tool_result_when_decoded_without_scene_hash_reads_none() -> None:
    # What a bridge from before the field sends still decodes.
    old = b'{"ok": true, "message": "m", "data": null, "mutated": true}'
    assert msgspec.json.decode(old, type=ToolResult).scene_hash is None


async def test_digest_cache_when_entries_are_dropped_or_the_snapshot_is_changed_stays_true(
    tmp_path: Path,
) -> None:
    # Inside the bridge's own Python: drop each cached entry in turn (as a tool's
    # declaration would) and compare with the snapshot described afresh; then change what
    # the cache handed out, through the tool and directly, and check the cache is intact.
    script = """
import json, sys
from services.bridge.scene import digests, fingerprint
from services.bridge import server
from services.bridge.tools import scene
scene.reset()
s = server.Server(sys.stdout)
def tool(tool_name, /, **arguments):
    params = {"name": tool_name, "arguments": arguments}
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
    result = s.handle_line(line).result.structured_content
    assert result.ok, result
    return result
def true():
    snap, scene_hash = digests.CACHE.snapshot()
    return snap == fingerprint.snapshot() and scene_hash == digests.full_hash()
tool("object.create", primitive="cube", name="A", location=[1, 2, 3])
tool("object.create", primitive="monkey", name="B")
tool("material.assign", object="A", material="M1", roughness=0.3)
tool("modifier.add", object="B", type="NODES")
tool("camera.create", name="Cam", look_at_object="A")
checks = {"kinds": sorted({kind for kind, _ in digests.CACHE.entries})}
for kind, name in sorted(digests.CACHE.entries):
    digests.CACHE.invalidate([name])
    checks[f"dropped {kind} {name}"] = true()
digests.CACHE.clear()
checks["cleared"] = true()
snap, _ = digests.CACHE.snapshot()
snap["objects"][0]["location"][0] = 99.0
snap["objects"][1]["modifiers"][0]["properties"].clear()
snap["node_groups"][0]["nodes"].clear()
snap["materials"].clear()
data = tool("scene.snapshot").data
data["objects"][0]["name"] = "Z"
data["objects"][0]["mesh"]["vertices"] = 0
checks["changed copies"] = true()
tool("object.delete", name="B")
digests.CACHE.scene_hash()
checks["entries"] = sorted(map(list, digests.CACHE.entries))
print("RESULT", json.dumps(checks))
"""
    checks, _ = await script_result(script)
    assert checks.pop("kinds") == ["material", "node_group", "object"]
    # Memory follows the scene: B and the group only it evaluated are gone.
    assert checks.pop("entries") == [["material", "M1"], ["object", "A"], ["object", "Cam"]]
    assert len(checks) > 5
    assert all(checks.values()), checks
