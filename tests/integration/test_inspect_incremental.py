"""The inspection artifact and the scene snapshot follow what changed, and always equal the
full computation (ADR 0036).

After every edit of a varied sequence (and of random ones) on a real bridge,
``blendmesh/scene.inspect`` (reusing the parts of what did not change) must equal
``blendmesh/scene.inspect_full`` (everything described afresh) exactly, and the
``scene.snapshot`` tool must equal ``blendmesh/scene.snapshot_full``. Edits whose effect
reaches objects no tool named (a Boolean's operand moved, a grandparent scaled, a shared
node group changed) check that the reused parts of those objects were dropped.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contracts.bridge import FullSnapshot
from contracts.inspection import InspectedObject, SceneInspection
from contracts.python_steps import code_sha256
from services.executor.adapters.bridge_client import BridgeProcess
from tests.support.bridges import bridge_fixtures, call, ok

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(180),
]

shared_bridge, bridge = bridge_fixtures()


def difference(kept: Any, full: Any, path: str = "") -> str:
    """Where two descriptions first differ, for a readable failure."""
    if isinstance(kept, dict) and isinstance(full, dict):
        for key in sorted(set(kept) | set(full)):
            if kept.get(key) != full.get(key):
                return difference(kept.get(key), full.get(key), f"{path}.{key}")
    if isinstance(kept, list) and isinstance(full, list) and len(kept) == len(full):
        for i, (a, b) in enumerate(zip(kept, full, strict=True)):
            if a != b:
                return difference(a, b, f"{path}[{i}]")
    return f"{path}: kept {kept!r} != full {full!r}"


async def inspect_full(bridge: BridgeProcess) -> SceneInspection:
    return await bridge.request("blendmesh/scene.inspect_full", SceneInspection)


async def agree(bridge: BridgeProcess, after: str) -> SceneInspection:
    """Assert the incremental inspection and snapshot equal the full ones; the inspection."""
    kept = await bridge.inspect()
    full = await inspect_full(bridge)
    if kept != full:
        diff = difference(msgspec.to_builtins(kept), msgspec.to_builtins(full))
        raise AssertionError(f"inspection after {after}: {diff}")
    # Byte for byte, as the artifact is stored.
    assert msgspec.json.encode(kept) == msgspec.json.encode(full)
    snap = (await ok(bridge, "scene.snapshot")).data
    whole = (await bridge.request("blendmesh/scene.snapshot_full", FullSnapshot)).data
    assert snap == whole, f"snapshot after {after}: {difference(snap, whole)}"
    return kept


def named(scene: SceneInspection, name: str) -> InspectedObject:
    return next(o for o in scene.objects if o.name == name)


async def python_step(bridge: BridgeProcess, code: str) -> None:
    result = await call(bridge, "python.safe", code=code, code_sha256=code_sha256(code))
    assert result.ok and result.mutated, result


async def prepared(tmp_path: Path, body: str) -> Path:
    """A .blend written by a bpy child process running ``body``."""
    path = tmp_path / "prepared.blend"
    script = (
        "import sys, bpy\nbpy.ops.wm.read_factory_settings(use_empty=True)\n"
        + textwrap.dedent(body)
        + "\nbpy.ops.wm.save_as_mainfile(filepath=sys.argv[1])\n"
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, str(path), stderr=asyncio.subprocess.PIPE
    )
    _, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()[-3000:]
    return path


# Two objects share one Geometry Nodes group; the second's group reads the first object.
SHARED_GROUP = """
def mesh_object(name, x):
    bpy.ops.mesh.primitive_cube_add(location=(x, 0, 0))
    ob = bpy.context.object
    ob.name = name
    return ob

left, right, reader = mesh_object("Left", 0), mesh_object("Right", 3), mesh_object("Reader", 6)
group = bpy.data.node_groups.new("Shared", "GeometryNodeTree")
group.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
group.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
gin, gout = group.nodes.new("NodeGroupInput"), group.nodes.new("NodeGroupOutput")
group.links.new(gin.outputs[0], gout.inputs[0])
for ob in (left, right):
    ob.modifiers.new("GN", "NODES").node_group = group
reads = bpy.data.node_groups.new("Reads", "GeometryNodeTree")
reads.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
info, rout = reads.nodes.new("GeometryNodeObjectInfo"), reads.nodes.new("NodeGroupOutput")
info.inputs["Object"].default_value = left
info.transform_space = "RELATIVE"  # Left as it stands, seen from Reader
reads.links.new(info.outputs["Geometry"], rout.inputs[0])
reader.modifiers.new("Reads", "NODES").node_group = reads
bpy.data.materials.new("Unused").use_fake_user = True  # kept unused in the file
"""


async def test_inspect_when_edits_of_every_kind_follow_equals_the_full_description(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="A")
    await ok(bridge, "object.create", primitive="monkey", name="B")
    await ok(bridge, "object.create", primitive="plane", name="C")
    await agree(bridge, "creating three objects")
    await ok(bridge, "object.transform", name="A", location=[1.0, 2.0, 3.0])
    moved = named(await agree(bridge, "a move"), "A")
    assert moved.location == [1.0, 2.0, 3.0]
    await ok(bridge, "object.rename", name="B", new_name="B2")
    assert [o.name for o in (await agree(bridge, "a rename")).objects] == ["A", "B2", "C"]
    await ok(bridge, "object.delete", name="C")
    await agree(bridge, "a delete")
    await ok(bridge, "modifier.add", object="A", type="BEVEL", properties={"segments": 3})
    beveled = named(await agree(bridge, "a modifier"), "A")
    assert beveled.evaluated_faces > 6

    # The Boolean's operand moves: only the operand is named, the cube's faces change.
    await ok(bridge, "modifier.remove", object="A", name="Bevel")
    await ok(bridge, "object.transform", name="B2", location=[40.0, 0.0, 0.0])
    await ok(bridge, "modifier.add", object="A", type="BOOLEAN", properties={"object": "B2"})
    apart = named(await agree(bridge, "a boolean whose operand is away"), "A")
    await ok(bridge, "object.transform", name="B2", location=[1.0, 2.0, 3.5])
    cut = named(await agree(bridge, "the operand moved into the cube"), "A")
    assert cut.evaluated_faces != apart.evaluated_faces
    await ok(bridge, "object.delete", name="B2")
    lost = named(await agree(bridge, "the operand deleted"), "A")
    assert lost.modifiers[0].error == "no operand object: the modifier is skipped"
    await ok(bridge, "modifier.remove", object="A", name="Boolean")
    # A Boolean whose operand is a collection: an object moved into it cuts the cube, and
    # only the object and the collection are named.
    await ok(bridge, "collection.create", name="Cutters")
    await ok(bridge, "modifier.add", object="A", type="BOOLEAN",
             properties={"operand_type": "COLLECTION", "collection": "Cutters"})  # fmt: skip
    await agree(bridge, "a boolean with an empty collection")
    whole = named(await agree(bridge, "a boolean with an empty collection, settled"), "A")
    await ok(bridge, "object.create", primitive="monkey", name="Cutter", location=[1, 2, 3.5])
    await ok(bridge, "collection.move", objects=["Cutter"], collection="Cutters")
    carved = named(await agree(bridge, "an object moved into the collection"), "A")
    assert carved.evaluated_faces != whole.evaluated_faces
    await ok(bridge, "object.delete", name="Cutter")
    await ok(bridge, "modifier.remove", object="A", name="Boolean")

    await ok(bridge, "material.assign", object="A", material="Red", base_color=[1, 0, 0])
    await ok(bridge, "material.assign", object="A", material="Red", base_color=[0, 0, 1])
    blue = await agree(bridge, "a material changed")
    assert blue.materials[0].base_color[:3] == [0.0, 0.0, 1.0]

    # A grandparent scaled: the grandchild's dimensions change, and no tool named it.
    await ok(bridge, "object.create", primitive="cube", name="Parent")
    await ok(bridge, "object.create", primitive="cube", name="Child")
    await ok(bridge, "object.create", primitive="cube", name="Grandchild")
    await ok(bridge, "object.parent", child="Child", parent="Parent")
    await ok(bridge, "object.parent", child="Grandchild", parent="Child")
    before = named(await agree(bridge, "parenting"), "Grandchild")
    # Again, so every report of that evaluation is taken: only the next one can drop parts.
    await agree(bridge, "parenting, settled")
    await ok(bridge, "object.transform", name="Parent", scale=[3.0, 1.0, 1.0])
    after = named(await agree(bridge, "a grandparent scaled"), "Grandchild")
    assert after.dimensions[0] == pytest.approx(3 * before.dimensions[0])
    # A parent renamed: its child names it, and only the child's digest says so.
    await ok(bridge, "object.rename", name="Child", new_name="Middle")
    assert named(await agree(bridge, "a parent renamed"), "Grandchild").parent == "Middle"
    await ok(bridge, "object.unparent", name="Middle")
    assert named(await agree(bridge, "an unparent"), "Middle").parent is None
    # Linked duplicates share their mesh, so a material given to one is the other's too.
    await ok(bridge, "object.duplicate", name="Parent", new_name="Twin", linked=True)
    await ok(bridge, "material.assign", object="Parent", material="Green", base_color=[0, 1, 0])
    assert named(await agree(bridge, "a shared mesh's material"), "Twin").materials == ["Green"]

    await python_step(bridge, "import bpy\nbpy.data.objects['A'].location.z += 1.5")
    stepped = named(await agree(bridge, "a Python step"), "A")
    assert stepped.location == [1.0, 2.0, 4.5]

    # A checkpoint restored (an undo, a revert): the file saved before is loaded again.
    saved = tmp_path / "checkpoint.blend"
    await bridge.save(str(saved))
    await ok(bridge, "object.transform", name="A", location=[9.0, 9.0, 9.0])
    await agree(bridge, "a move after the checkpoint")
    await bridge.load(str(saved))
    assert named(await agree(bridge, "the checkpoint restored"), "A").location == [1, 2, 4.5]

    await bridge.load(str(await prepared(tmp_path, SHARED_GROUP)))
    loaded = await agree(bridge, "another file loaded")
    assert [g.name for g in loaded.node_groups] == ["Reads", "Shared"]
    assert [(m.name, m.users) for m in loaded.materials] == [("Unused", 1)]
    await agree(bridge, "another file loaded, settled")
    await ok(bridge, "object.transform", name="Left", scale=[2.0, 2.0, 2.0])
    reader = named(await agree(bridge, "the object a group reads scaled"), "Reader")
    # Reader's geometry is Left's, as Left stands: only Left was named.
    assert reader.dimensions != named(loaded, "Reader").dimensions
    # One object's edit of the shared group changes the other's evaluated geometry too.
    gn = {"modifier": "GN"}
    await ok(bridge, "gn.add_node", object="Left", node_id="n1",
             bl_idname="GeometryNodeMeshCube", **gn)  # fmt: skip
    await agree(bridge, "a node added to a shared group")
    await ok(bridge, "modifier.remove", object="Right", name="GN")
    assert [g.users for g in (await agree(bridge, "a group user removed")).node_groups] == [1, 1]

    await bridge.reset()
    assert (await agree(bridge, "a reset")).objects == []


async def test_inspect_when_nothing_changed_twice_gives_the_same_description(
    bridge: BridgeProcess,
) -> None:
    for i in range(4):
        await ok(bridge, "object.create", primitive="cube", name=f"O{i}")
    first = await bridge.inspect()
    again = await bridge.inspect()
    assert msgspec.json.encode(first) == msgspec.json.encode(again)
    await ok(bridge, "object.transform", name="O2", location=[0.0, 0.0, 7.0])
    moved = await agree(bridge, "a move")
    assert [o.location[2] for o in moved.objects] == [0.0, 0.0, 7.0, 0.0]


NAMES = ("A", "B", "C")
names = st.sampled_from(NAMES)
coords = st.lists(st.integers(-4, 4).map(float), min_size=3, max_size=3)
GN = {"modifier": st.just("GN")}


def step(tool: str, **args: st.SearchStrategy[Any]) -> st.SearchStrategy[tuple[str, Any]]:
    return st.tuples(st.just(tool), st.fixed_dictionaries(args))


STEPS = st.one_of(
    step("object.create", name=names, primitive=st.sampled_from(["cube", "monkey"])),
    step("object.transform", name=names, location=coords),
    step("object.transform", name=names, scale=coords.map(lambda v: [abs(x) + 1 for x in v])),
    step("object.rename", name=names, new_name=names),
    step("object.delete", name=names),
    step("object.duplicate", name=names, new_name=names, linked=st.booleans()),
    step("object.parent", child=names, parent=names),
    step("object.unparent", name=names),
    step("object.visibility", name=names, viewport=st.booleans()),
    step("modifier.add", object=names, type=st.just("BOOLEAN"),
         properties=names.map(lambda n: {"object": n})),
    step("modifier.add", object=names, type=st.just("BEVEL")),
    step("modifier.remove", object=names, name=st.sampled_from(["Bevel", "Boolean"])),
    step("material.assign", object=names, material=st.sampled_from(["M1", "M2"]),
         base_color=st.sampled_from([[1, 0, 0], [0, 1, 0]])),
    step("gn.ensure_target", object=names, allow_create_modifier=st.just(True), **GN),
    step("gn.add_node", object=names, node_id=st.just("n1"),
         bl_idname=st.just("GeometryNodeMeshCube"), **GN),
    step("scene.save_load"),
)  # fmt: skip


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(STEPS, min_size=1, max_size=10))
async def test_inspect_when_tools_run_in_any_order_equals_the_full_description(
    shared_bridge: BridgeProcess, steps: list[tuple[str, dict[str, Any]]]
) -> None:
    await shared_bridge.reset()
    # A chain to start from, C under B under A: what happens to A reaches C unnamed.
    await ok(shared_bridge, "object.create", primitive="cube", name="A")
    await ok(shared_bridge, "object.create", primitive="monkey", name="B")
    await ok(shared_bridge, "object.create", primitive="cube", name="C")
    await ok(shared_bridge, "object.parent", child="B", parent="A")
    await ok(shared_bridge, "object.parent", child="C", parent="B")
    await agree(shared_bridge, "the start")
    await agree(shared_bridge, "the start, settled")  # the first step's reuses parts
    with tempfile.TemporaryDirectory(prefix="blendmesh-inspect-") as tmp:
        for tool, args in steps:
            if tool == "scene.save_load":
                path = str(Path(tmp) / "round.blend")
                await shared_bridge.save(path)
                await shared_bridge.load(path)
            else:
                await call(shared_bridge, tool, **args)  # some fail on purpose
            await agree(shared_bridge, f"{tool} {args}")
