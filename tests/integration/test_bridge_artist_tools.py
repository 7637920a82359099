"""Integration tests: cameras, lights, world, duplicate, parenting, shading, collections,
visibility and keyframes, on real bpy in a real bridge process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from contracts.bridge import Compensation, ToolResult
from services.executor.adapters.bridge_client import BridgeProcess
from tests.support.bridges import bridge_fixtures, call, ok

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(120),
]

shared_bridge, bridge = bridge_fixtures()

# tool: (safety level, idempotence class, compensation), as the planner is told.
ARTIST_TOOLS = {
    "camera.create": ("safe_write", "non_idempotent", "object.delete"),
    "camera.set": ("safe_write", "idempotent", "checkpoint"),
    "camera.set_active": ("safe_write", "idempotent", "checkpoint"),
    "light.create": ("safe_write", "non_idempotent", "object.delete"),
    "light.set": ("safe_write", "idempotent", "checkpoint"),
    "world.set": ("safe_write", "idempotent", "checkpoint"),
    "object.duplicate": ("safe_write", "non_idempotent", "object.delete"),
    "object.parent": ("safe_write", "idempotent", "checkpoint"),
    "object.unparent": ("safe_write", "idempotent", "checkpoint"),
    "object.shade": ("safe_write", "idempotent", "checkpoint"),
    "collection.create": ("safe_write", "non_idempotent", "checkpoint"),
    "collection.move": ("safe_write", "idempotent", "checkpoint"),
    "object.visibility": ("safe_write", "idempotent", "checkpoint"),
    "modifier.apply": ("destructive", "non_idempotent", "checkpoint"),
    "keyframe.insert": ("safe_write", "idempotent", "checkpoint"),
}


def data(result: ToolResult) -> dict[str, Any]:
    assert result.data is not None, result
    return result.data


async def snapshot(bridge: BridgeProcess) -> dict[str, Any]:
    return data(await ok(bridge, "scene.snapshot"))


async def objects(bridge: BridgeProcess) -> dict[str, dict[str, Any]]:
    return {o["name"]: o for o in (await snapshot(bridge))["objects"]}


async def refused(bridge: BridgeProcess, code: str, tool: str, /, **arguments: Any) -> str:
    """Call a tool that must fail with ``code`` and leave the scene as it was."""
    before = await bridge.fingerprint()
    result = await call(bridge, tool, **arguments)
    assert not result.ok and result.error_code == code, result
    assert not result.mutated, result
    assert await bridge.fingerprint() == before
    return result.message


async def compensate(bridge: BridgeProcess, result: ToolResult) -> None:
    comp = result.compensation
    assert comp is not None, result
    await ok(bridge, comp.tool, **comp.arguments)


def unbounded_numbers(schema: Any, where: str = "") -> list[str]:
    """Paths of number/integer schemas without both a minimum and a maximum."""
    found = []
    if isinstance(schema, dict):
        if schema.get("type") in ("number", "integer") and not (
            "minimum" in schema and "maximum" in schema
        ):
            found.append(where)
        for key, value in schema.items():
            found += unbounded_numbers(value, f"{where}.{key}")
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            found += unbounded_numbers(value, f"{where}[{index}]")
    return found


async def test_tools_list_when_started_has_artist_tools_strict_and_bounded(
    bridge: BridgeProcess,
) -> None:
    tools = {t["name"]: t for t in await bridge.list_tools()}
    for name, (safety, idempotence, compensation) in ARTIST_TOOLS.items():
        meta = tools[name]["_meta"]["blendmesh"]
        assert (meta["safety_level"], meta["idempotence_class"], meta["compensation"]) == (
            safety,
            idempotence,
            compensation,
        ), name
        assert meta["determinism_class"] == "deterministic"
        assert meta["safety_mode"] == "headless_safe"
        schema = tools[name]["inputSchema"]
        assert schema["additionalProperties"] is False, name
        assert unbounded_numbers(schema) == [], name
    assert tools["modifier.apply"]["annotations"]["destructiveHint"] is True
    assert "NODES" in tools["modifier.add"]["inputSchema"]["properties"]["type"]["enum"]


# Cameras ---------------------------------------------------------------------------------


async def test_camera_create_when_scene_has_none_becomes_active_and_delete_restores(
    bridge: BridgeProcess,
) -> None:
    empty = await bridge.fingerprint()
    result = await ok(bridge, "camera.create", location=[0, -10, 0], look_at_point=[0, 0, 0])
    assert data(result)["active"] is True
    assert data(result)["rotation"] == pytest.approx([90, 0, 0], abs=1e-4)
    assert result.compensation == Compensation(tool="object.delete", arguments={"name": "Camera"})
    snap = await snapshot(bridge)
    assert snap["active_camera"] == "Camera"
    (camera,) = snap["objects"]
    assert camera["camera"] == {"lens": 50.0, "type": "PERSP"}
    await compensate(bridge, result)
    assert await bridge.fingerprint() == empty
    # The camera data went with it, so a second camera gets the same names (and hash).
    again = await ok(bridge, "camera.create", location=[0, -10, 0], look_at_point=[0, 0, 0])
    assert (await objects(bridge))["Camera"]["data"] == "Camera"
    await compensate(bridge, again)


async def test_camera_create_when_looking_at_object_aims_at_its_world_location(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box", location=[0, 0, 5])
    result = await ok(
        bridge, "camera.create", name="Top", location=[0, 0, 15], look_at_object="Box", lens=85
    )
    assert data(result)["rotation"] == pytest.approx([0, 0, 0], abs=1e-4)
    assert (await objects(bridge))["Top"]["camera"]["lens"] == 85.0


async def test_camera_create_when_another_is_active_keeps_it_unless_make_active(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "camera.create", name="Main")
    second = await ok(bridge, "camera.create", name="Side", location=[5, 0, 0])
    assert data(second)["active"] is False
    assert (await snapshot(bridge))["active_camera"] == "Main"
    third = await ok(bridge, "camera.create", name="Close", make_active=True)
    assert (await snapshot(bridge))["active_camera"] == "Close"
    # Deleting Close could not make Main active again: the executor restores a checkpoint.
    assert third.compensation is None


async def test_camera_create_when_arguments_wrong_refuses_without_change(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    assert "Box" in await refused(bridge, "conflict", "camera.create", name="Box")
    assert "Ghost" in await refused(bridge, "not_found", "camera.create", look_at_object="Ghost")
    message = await refused(
        bridge, "invalid_input", "camera.create", rotation=[0, 0, 0], look_at_point=[1, 0, 0]
    )
    assert "only one" in message
    message = await refused(
        bridge, "invalid_input", "camera.create", location=[1, 1, 1], look_at_point=[1, 1, 1]
    )
    assert "where the camera is" in message
    assert "lens" in await refused(bridge, "invalid_input", "camera.create", lens=0.5)
    await refused(bridge, "invalid_input", "camera.create", location=[2e6, 0, 0])


async def test_camera_set_when_lens_and_target_given_changes_camera(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "camera.create", location=[0, -10, 0])
    before = await bridge.fingerprint()
    result = await ok(bridge, "camera.set", name="Camera", lens=24, look_at_point=[0, 0, 0])
    assert data(result)["rotation"] == pytest.approx([90, 0, 0], abs=1e-4)
    assert data(result)["location"] == pytest.approx([0, -10, 0])
    assert (await objects(bridge))["Camera"]["camera"]["lens"] == 24.0
    assert await bridge.fingerprint() != before


async def test_camera_set_when_camera_is_parented_aims_in_world_space(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Rig", rotation=[0, 0, 90])
    await ok(bridge, "camera.create", location=[0, -10, 0])
    await ok(bridge, "object.parent", child="Camera", parent="Rig")
    await ok(bridge, "camera.set", name="Camera", look_at_point=[0, 0, 0])
    await ok(bridge, "object.unparent", name="Camera")
    camera = (await objects(bridge))["Camera"]
    # Back in world space the camera looks along +Y from where it was.
    assert camera["location"] == pytest.approx([0, -10, 0], abs=1e-5)
    assert camera["rotation"][:2] == pytest.approx([1.570796, 0], abs=1e-5)


async def test_camera_set_when_target_wrong_refuses_without_change(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    await ok(bridge, "camera.create")
    assert "MESH" in await refused(bridge, "invalid_input", "camera.set", name="Box", lens=35)
    assert "Ghost" in await refused(bridge, "not_found", "camera.set", name="Ghost", lens=35)
    await refused(bridge, "not_found", "camera.set", name="Camera", look_at_object="Ghost")
    await refused(bridge, "invalid_input", "camera.set", name="Camera")
    await refused(bridge, "invalid_input", "camera.set", name="Camera", lens=6000)


async def test_camera_set_active_when_other_camera_switches_and_repeat_is_noop(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "camera.create", name="Main")
    await ok(bridge, "camera.create", name="Side")
    switched = await ok(bridge, "camera.set_active", name="Side")
    assert switched.mutated is True
    assert (await snapshot(bridge))["active_camera"] == "Side"
    again = await ok(bridge, "camera.set_active", name="Side")
    assert again.mutated is False
    await ok(bridge, "light.create", kind="point")
    assert "LIGHT" in await refused(bridge, "invalid_input", "camera.set_active", name="Point")
    await refused(bridge, "not_found", "camera.set_active", name="Ghost")


# Lights and world ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "name", "size", "stored_size"),
    [
        ("point", "Point", 0.5, 0.5),
        ("spot", "Spot", 0.25, 0.25),
        ("area", "Area", 2.0, 2.0),
        ("sun", "Sun", 90.0, 1.570796),  # degrees in, radians in the snapshot
    ],
)
async def test_light_create_when_each_kind_appears_in_snapshot_and_delete_restores(
    bridge: BridgeProcess, kind: str, name: str, size: float, stored_size: float
) -> None:
    empty = await bridge.fingerprint()
    result = await ok(bridge, "light.create", kind=kind, power=500, color=[1, 0.5, 0.25], size=size)
    assert data(result)["name"] == name
    assert data(result)["size"] == pytest.approx(size, abs=1e-5)
    light = (await objects(bridge))[name]["light"]
    assert light == {
        "type": kind.upper(),
        "energy": 500.0,
        "color": [1.0, 0.5, 0.25],
        "size": stored_size,
    }
    await compensate(bridge, result)
    assert await bridge.fingerprint() == empty


async def test_light_create_when_arguments_wrong_refuses_without_change(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "light.create", kind="point", name="Key")
    assert "Key" in await refused(bridge, "conflict", "light.create", kind="area", name="Key")
    message = await refused(bridge, "invalid_input", "light.create", kind="sun", size=200)
    assert "degrees" in message and "180" in message
    await refused(bridge, "invalid_input", "light.create", kind="laser")
    await refused(bridge, "invalid_input", "light.create", kind="point", color=[2, 0, 0])
    await refused(bridge, "invalid_input", "light.create", kind="point", power=-1)
    await refused(bridge, "invalid_input", "light.create", kind="point", power=2e6)


async def test_light_set_when_values_given_changes_light_and_refuses_non_lights(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "light.create", kind="sun")
    before = await bridge.fingerprint()
    result = await ok(bridge, "light.set", name="Sun", power=3, size=10)
    assert (data(result)["energy"], data(result)["size"]) == (3.0, pytest.approx(10, abs=1e-5))
    assert await bridge.fingerprint() != before
    await ok(bridge, "camera.create")
    assert "CAMERA" in await refused(bridge, "invalid_input", "light.set", name="Camera", power=1)
    await refused(bridge, "not_found", "light.set", name="Ghost", power=1)
    await refused(bridge, "invalid_input", "light.set", name="Sun")
    await refused(bridge, "invalid_input", "light.set", name="Sun", size=181)


async def test_world_set_when_scene_has_no_world_creates_one_and_sets_it(
    bridge: BridgeProcess,
) -> None:
    assert "world" not in await snapshot(bridge)
    empty = await bridge.fingerprint()
    await ok(bridge, "world.set", color=[0.1, 0.2, 0.3])
    assert (await snapshot(bridge))["world"] == {
        "name": "World",
        "color": [0.1, 0.2, 0.3],
        "strength": 1.0,
    }
    lit = await bridge.fingerprint()
    assert lit != empty
    await ok(bridge, "world.set", strength=2.5)
    assert (await snapshot(bridge))["world"]["strength"] == 2.5
    await ok(bridge, "world.set", strength=1.0)
    assert await bridge.fingerprint() == lit
    await refused(bridge, "invalid_input", "world.set")
    await refused(bridge, "invalid_input", "world.set", strength=1001)
    await refused(bridge, "invalid_input", "world.set", color=[0, 0, 1.5])


# Duplicate, parent, unparent --------------------------------------------------------------


async def test_object_duplicate_when_full_copy_owns_its_mesh_and_delete_restores(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box", location=[1, 0, 0])
    await ok(bridge, "modifier.add", object="Box", type="BEVEL")
    before = await bridge.fingerprint()
    result = await ok(bridge, "object.duplicate", name="Box", offset=[0, 2, 0])
    assert data(result)["name"] == "Box.001"
    copy = (await objects(bridge))["Box.001"]
    assert (copy["data"], copy["location"]) == ("Box.001", [1.0, 2.0, 0.0])
    assert [m["type"] for m in copy["modifiers"]] == ["BEVEL"]
    await compensate(bridge, result)
    assert await bridge.fingerprint() == before


async def test_object_duplicate_when_linked_shares_the_mesh(bridge: BridgeProcess) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    await ok(bridge, "object.duplicate", name="Box", new_name="Twin", linked=True)
    found = await objects(bridge)
    assert found["Twin"]["data"] == "Box"
    await ok(bridge, "object.shade", name="Twin", smooth=True)
    assert (await objects(bridge))["Box"]["smooth_faces"] == 6


async def test_object_duplicate_when_arguments_wrong_refuses_without_change(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    await ok(bridge, "object.create", primitive="plane", name="Floor")
    message = await refused(bridge, "conflict", "object.duplicate", name="Box", new_name="Floor")
    assert "Floor" in message
    assert "Ghost" in await refused(bridge, "not_found", "object.duplicate", name="Ghost")
    await refused(bridge, "invalid_input", "object.duplicate", name="Box", offset=[0, 0, 1e7])


async def test_object_parent_when_parented_keeps_world_place_and_unparent_restores(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Base", location=[1, 0, 0])
    await ok(bridge, "object.transform", name="Base", rotation=[0, 0, 90])
    await ok(bridge, "object.create", primitive="cube", name="Top", location=[3, 0, 0])
    before = await bridge.fingerprint()
    result = await ok(bridge, "object.parent", child="Top", parent="Base")
    assert result.mutated is True
    top = (await objects(bridge))["Top"]
    # World (3, 0, 0) seen from a parent at (1, 0, 0) turned 90 degrees about Z.
    assert (top["parent"], top["location"]) == ("Base", pytest.approx([0, -2, 0], abs=1e-6))
    assert "parent_inverse" not in top
    again = await ok(bridge, "object.parent", child="Top", parent="Base")
    assert again.mutated is False
    await ok(bridge, "object.unparent", name="Top")
    assert await bridge.fingerprint() == before
    alone = await ok(bridge, "object.unparent", name="Top")
    assert alone.mutated is False


async def test_object_parent_when_cycle_or_missing_refuses_without_change(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="A")
    await ok(bridge, "object.create", primitive="cube", name="B")
    await ok(bridge, "object.parent", child="B", parent="A")
    message = await refused(bridge, "invalid_input", "object.parent", child="A", parent="B")
    assert "descendants" in message
    assert "same" in await refused(bridge, "invalid_input", "object.parent", child="A", parent="A")
    assert "Ghost" in await refused(bridge, "not_found", "object.parent", child="A", parent="Ghost")
    assert "Ghost" in await refused(bridge, "not_found", "object.parent", child="Ghost", parent="A")
    assert "Ghost" in await refused(bridge, "not_found", "object.unparent", name="Ghost")


# Shading, visibility, collections ---------------------------------------------------------


async def test_object_shade_when_smooth_then_flat_returns_to_the_same_hash(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="uv_sphere", name="Ball")
    flat = await bridge.fingerprint()
    result = await ok(bridge, "object.shade", name="Ball", smooth=True)
    assert result.mutated is True
    ball = (await objects(bridge))["Ball"]
    assert ball["smooth_faces"] == ball["mesh"]["polygons"]
    assert (await ok(bridge, "object.shade", name="Ball", smooth=True)).mutated is False
    await ok(bridge, "object.shade", name="Ball", smooth=False)
    assert await bridge.fingerprint() == flat
    await ok(bridge, "light.create", kind="point")
    assert "MESH" in await refused(
        bridge, "invalid_input", "object.shade", name="Point", smooth=True
    )
    await refused(bridge, "not_found", "object.shade", name="Ghost", smooth=True)
    await refused(bridge, "invalid_input", "object.shade", name="Ball")


async def test_object_visibility_when_hidden_then_shown_returns_to_the_same_hash(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    shown = await bridge.fingerprint()
    await ok(bridge, "object.visibility", name="Box", render=False)
    assert (await objects(bridge))["Box"]["hidden"] == ["render"]
    await ok(bridge, "object.visibility", name="Box", viewport=False)
    assert (await objects(bridge))["Box"]["hidden"] == ["viewport", "render"]
    unchanged = await ok(bridge, "object.visibility", name="Box", viewport=False, render=False)
    assert unchanged.mutated is False
    await ok(bridge, "object.visibility", name="Box", viewport=True, render=True)
    assert await bridge.fingerprint() == shown
    await refused(bridge, "invalid_input", "object.visibility", name="Box")
    await refused(bridge, "not_found", "object.visibility", name="Ghost", render=False)


async def test_collection_create_and_move_when_nested_change_snapshot(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    await ok(bridge, "object.create", primitive="plane", name="Floor")
    await ok(bridge, "collection.create", name="Set")
    await ok(bridge, "collection.create", name="Props", parent="Set")
    created = await bridge.fingerprint()
    assert (await snapshot(bridge))["collections"] == [
        ["Props", ["Set"]],
        ["Set", ["Scene Collection"]],
    ]
    moved = await ok(bridge, "collection.move", objects=["Box", "Floor"], collection="Props")
    assert data(moved)["moved"] == ["Box", "Floor"]
    assert (await objects(bridge))["Box"]["collections"] == ["Props"]
    again = await ok(bridge, "collection.move", objects=["Box"], collection="Props")
    assert again.mutated is False
    await ok(bridge, "collection.move", objects=["Box", "Floor"], collection="Scene Collection")
    assert await bridge.fingerprint() == created


async def test_collection_tools_when_arguments_wrong_refuse_without_change(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    await ok(bridge, "collection.create", name="Set")
    assert "Set" in await refused(bridge, "conflict", "collection.create", name="Set")
    await refused(bridge, "conflict", "collection.create", name="Scene Collection")
    message = await refused(bridge, "not_found", "collection.create", name="X", parent="Nope")
    assert "Nope" in message and "Set" in message
    message = await refused(
        bridge, "not_found", "collection.move", objects=["Box", "Ghost", "Wisp"], collection="Set"
    )
    assert "'Ghost'" in message and "'Wisp'" in message
    await refused(bridge, "not_found", "collection.move", objects=["Box"], collection="Nope")
    await refused(bridge, "invalid_input", "collection.move", objects=[], collection="Set")
    await refused(
        bridge, "invalid_input", "collection.move", objects=["Box", "Box"], collection="Set"
    )
    await refused(
        bridge, "invalid_input", "collection.move", objects=["Box"] * 101, collection="Set"
    )


# Keyframes -------------------------------------------------------------------------------


async def test_keyframe_insert_when_keyed_twice_shows_current_frame_pose(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    still = await bridge.fingerprint()
    first = await ok(bridge, "keyframe.insert", name="Box", property="location", frame=1)
    assert data(first)["keyframes"] == {"0": 1, "1": 1, "2": 1}
    assert await bridge.fingerprint() != still
    await ok(bridge, "keyframe.insert", name="Box", property="location", frame=50, value=[5, 0, 0])
    box = (await objects(bridge))["Box"]
    # Frame 1 is current: the object shows the pose keyed there, not the value keyed at 50.
    assert box["location"] == [0.0, 0.0, 0.0]
    assert [k[:3] for k in box["keyframes"]] == [
        ["location", 0, 2],
        ["location", 1, 2],
        ["location", 2, 2],
    ]
    keyed = await bridge.fingerprint()
    repeat = await ok(
        bridge, "keyframe.insert", name="Box", property="location", frame=50, value=[5, 0, 0]
    )
    assert repeat.mutated is True
    assert await bridge.fingerprint() == keyed
    # An evaluation (inspect) and a checkpoint round trip leave the hash as it was.
    await bridge.inspect()
    saved = await bridge.save(str(tmp_path / "keys.blend"))
    assert saved.hash == keyed
    assert await bridge.load(saved.path) == keyed


async def test_keyframe_insert_when_rotation_and_scale_keyed_record_their_paths(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    await ok(bridge, "keyframe.insert", name="Box", property="rotation", frame=1, value=[0, 0, 90])
    await ok(bridge, "keyframe.insert", name="Box", property="scale", frame=1, value=[2, 2, 2])
    box = (await objects(bridge))["Box"]
    assert box["rotation"] == pytest.approx([0, 0, 1.570796], abs=1e-6)
    assert box["scale"] == [2.0, 2.0, 2.0]
    assert sorted({k[0] for k in box["keyframes"]}) == ["rotation_euler", "scale"]


async def test_keyframe_insert_when_arguments_wrong_refuses_without_change(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    args = {"name": "Box", "property": "location"}
    await refused(bridge, "not_found", "keyframe.insert", **{**args, "name": "Ghost", "frame": 1})
    await refused(bridge, "invalid_input", "keyframe.insert", **args, frame=-1)
    await refused(bridge, "invalid_input", "keyframe.insert", **args, frame=1048575)
    await refused(bridge, "invalid_input", "keyframe.insert", **args, frame=1.5)
    await refused(bridge, "invalid_input", "keyframe.insert", name="Box", property="color", frame=1)
    message = await refused(
        bridge, "invalid_input", "keyframe.insert", name="Box", property="scale", frame=1,
        value=[2e4, 1, 1],
    )  # fmt: skip
    assert "scale" in message
