"""Integration tests: the modelling tools on named meshes, on real bpy in a real bridge:
what each makes, what it refuses and that a refusal leaves the scene as it was."""

from __future__ import annotations

from typing import Any

import pytest

from services.executor.adapters.bridge_client import BridgeProcess
from tests.integration.test_bridge_artist_tools import data, objects, refused, unbounded_numbers
from tests.support.bridges import bridge_fixtures, call, ok

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(120),
]

shared_bridge, bridge = bridge_fixtures()

# tool: (safety level, idempotence class)
MODELLING = {
    "mesh.extrude": ("safe_write", "non_idempotent"),
    "mesh.inset": ("safe_write", "non_idempotent"),
    "mesh.bevel": ("safe_write", "non_idempotent"),
    "mesh.solidify": ("safe_write", "non_idempotent"),
    "mesh.mirror": ("safe_write", "non_idempotent"),
    "mesh.boolean": ("safe_write", "non_idempotent"),
    "mesh.merge_by_distance": ("safe_write", "idempotent"),
    "mesh.recalculate_normals": ("safe_write", "idempotent"),
    "mesh.shade_auto_smooth": ("safe_write", "idempotent"),
    "mesh.join": ("destructive", "non_idempotent"),
    "mesh.separate": ("safe_write", "non_idempotent"),
    "mesh.origin_set": ("safe_write", "idempotent"),
    "mesh.apply_transform": ("safe_write", "idempotent"),
}


async def cube(bridge: BridgeProcess, name: str = "Box", **more: Any) -> None:
    await ok(bridge, "object.create", primitive="cube", name=name, **more)


async def mesh_of(bridge: BridgeProcess, name: str) -> dict[str, Any]:
    return data(await ok(bridge, "object.inspect", name=name))


async def test_modelling_tools_when_listed_are_strict_bounded_and_declare_outputs(
    bridge: BridgeProcess,
) -> None:
    tools = {t["name"]: t for t in await bridge.list_tools()}
    for name, (safety, idempotence) in MODELLING.items():
        meta = tools[name]["_meta"]["blendmesh"]
        assert (meta["safety_level"], meta["idempotence_class"]) == (safety, idempotence), name
        assert meta["compensation"] == "checkpoint" and meta["determinism_class"] == "deterministic"
        assert tools[name]["inputSchema"]["additionalProperties"] is False
        assert unbounded_numbers(tools[name]["inputSchema"]) == [], name
        assert tools[name]["outputSchema"]["required"][:1] == ["object"], name


async def test_bevel_when_all_edges_of_a_cube_makes_its_chamfer(bridge: BridgeProcess) -> None:
    await cube(bridge)
    result = data(await ok(bridge, "mesh.bevel", object="Box", width=0.1))
    # A one-segment bevel of every edge of a cube: 24 vertices, 26 faces.
    assert (result["vertices"], result["faces"], result["bevelled"]) == (24, 26, 12)


async def test_bevel_when_sharp_rule_finds_no_sharp_edge_refuses_unchanged(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="plane", name="Flat")
    said = await refused(bridge, "invalid_input", "mesh.bevel", object="Flat", width=0.1,
                         rule="sharp", angle=10)  # fmt: skip
    assert "picks no edges" in said


async def test_bevel_when_vertex_group_missing_names_the_groups_it_has(
    bridge: BridgeProcess,
) -> None:
    await cube(bridge)
    said = await refused(bridge, "not_found", "mesh.bevel", object="Box", width=0.1,
                         rule="vertex_group", vertex_group="Rim")  # fmt: skip
    assert "'Rim'" in said and "none" in said


async def test_extrude_when_top_face_moves_it_up_and_adds_four_sides(
    bridge: BridgeProcess,
) -> None:
    await cube(bridge)
    result = data(await ok(bridge, "mesh.extrude", object="Box", distance=1, rule="facing"))
    assert (result["vertices"], result["faces"], result["extruded"]) == (12, 10, 1)
    high = (await mesh_of(bridge, "Box"))["world_bounds"][1]
    assert high[2] == pytest.approx(2.0)


async def test_extrude_when_region_faces_every_way_refuses_naming_individual(
    bridge: BridgeProcess,
) -> None:
    await cube(bridge)
    said = await refused(bridge, "invalid_input", "mesh.extrude", object="Box", distance=1)
    assert "face every way" in said and "individual=true" in said
    result = data(await ok(bridge, "mesh.extrude", object="Box", distance=1, individual=True))
    assert (result["vertices"], result["faces"]) == (32, 30)
    said = await refused(bridge, "invalid_input", "mesh.inset", object="Box", thickness=0.1)
    assert "no border" in said and "individual=true" in said


async def test_inset_when_individual_insets_every_face(bridge: BridgeProcess) -> None:
    await cube(bridge)
    result = data(await ok(bridge, "mesh.inset", object="Box", thickness=0.2, individual=True))
    assert (result["vertices"], result["faces"]) == (32, 30)


async def test_solidify_and_mirror_when_applied_double_the_vertices(bridge: BridgeProcess) -> None:
    await ok(bridge, "object.create", primitive="plane", name="Sheet", location=[2, 0, 0])
    solid = data(await ok(bridge, "mesh.solidify", object="Sheet", thickness=0.1))
    assert solid["vertices"] == 8
    await ok(bridge, "object.create", primitive="plane", name="Half", location=[0, 0, 1])
    await ok(bridge, "mesh.apply_transform", object="Half", location=True)  # z=1 in the mesh
    mirrored = data(await ok(bridge, "mesh.mirror", object="Half", axis="Z"))
    assert mirrored["vertices"] == 8 and mirrored["faces"] == 2


async def test_boolean_when_difference_cuts_the_other_out(bridge: BridgeProcess) -> None:
    await cube(bridge)
    await cube(bridge, "Cutter", location=[1, 1, 1])
    result = data(await ok(bridge, "mesh.boolean", object="Box", operation="difference",
                           **{"with": "Cutter"}))  # fmt: skip
    assert result["vertices"] > 8
    scene = await objects(bridge)
    assert "Cutter" in scene  # left as it was
    said = await refused(bridge, "invalid_input", "mesh.boolean", object="Box",
                         operation="union", **{"with": "Box"})  # fmt: skip
    assert "two objects" in said


async def test_merge_and_normals_when_mesh_is_clean_change_nothing(bridge: BridgeProcess) -> None:
    await cube(bridge)
    merged = await ok(bridge, "mesh.merge_by_distance", object="Box")
    assert data(merged)["removed"] == 0 and merged.mutated is False
    normals = await ok(bridge, "mesh.recalculate_normals", object="Box")
    assert data(normals)["flipped"] == 0 and normals.mutated is False
    inside = await ok(bridge, "mesh.recalculate_normals", object="Box", inside=True)
    assert data(inside)["flipped"] == 6


async def test_shade_auto_smooth_when_cube_keeps_its_twelve_edges_sharp(
    bridge: BridgeProcess,
) -> None:
    await cube(bridge)
    result = data(await ok(bridge, "mesh.shade_auto_smooth", object="Box", angle=30))
    assert result["sharp_edges"] == 12


async def test_join_and_separate_when_round_tripped_give_two_objects_again(
    bridge: BridgeProcess,
) -> None:
    await cube(bridge)
    await cube(bridge, "Other", location=[5, 0, 0])
    joined = data(await ok(bridge, "mesh.join", object="Box", objects=["Other"]))
    assert joined["vertices"] == 16 and joined["joined"] == ["Other"]
    assert "Other" not in await objects(bridge)
    parts = data(await ok(bridge, "mesh.separate", object="Box", by="loose_parts"))
    assert parts["vertices"] == 8 and len(parts["parts"]) == 1
    said = await refused(bridge, "invalid_input", "mesh.join", object="Box", objects=["Box"])
    assert "into itself" in said


async def test_origin_and_apply_transform_when_used_keep_the_mesh_where_it_was(
    bridge: BridgeProcess,
) -> None:
    await cube(bridge, location=[1, 2, 3], scale=[2, 2, 2])
    before = (await mesh_of(bridge, "Box"))["world_bounds"]
    applied = data(await ok(bridge, "mesh.apply_transform", object="Box", scale=True))
    assert applied["applied"] == ["scale"]
    moved = data(await ok(bridge, "mesh.apply_transform", object="Box", location=True))
    assert moved["applied"] == ["location"]
    centred = data(await ok(bridge, "mesh.origin_set", object="Box", to="bounds"))
    assert centred["origin"] == pytest.approx([1, 2, 3])
    after = await mesh_of(bridge, "Box")
    for now, was in zip(after["world_bounds"], before, strict=True):
        assert now == pytest.approx(was)
    assert after["scale"] == pytest.approx([1, 1, 1])
    said = await refused(bridge, "invalid_input", "mesh.apply_transform", object="Box")
    assert "at least one" in said


async def test_edit_when_mesh_is_shared_refuses_naming_the_fix(bridge: BridgeProcess) -> None:
    await cube(bridge)
    await ok(bridge, "object.duplicate", name="Box", new_name="Twin", linked=True)
    said = await refused(bridge, "invalid_input", "mesh.bevel", object="Box", width=0.1)
    assert "shared" in said and "linked=false" in said


async def test_edit_when_not_a_mesh_refuses_naming_its_kind(bridge: BridgeProcess) -> None:
    await ok(bridge, "light.create", kind="point", name="Lamp")
    said = await refused(bridge, "invalid_input", "mesh.extrude", object="Lamp", distance=1)
    assert "needs a MESH object" in said and "LIGHT" in said


async def test_edit_when_over_the_geometry_budget_refuses_before_making_it(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="uv_sphere", name="Ball")
    passes = 0
    while passes < 4:  # each pass multiplies the vertices; the budget stops it first
        before = await bridge.fingerprint()
        result = await call(bridge, "mesh.bevel", object="Ball", width=0.0001, segments=16)
        if not result.ok:
            break
        passes += 1
    assert passes >= 1  # a bevel within the default budget stands
    assert not result.ok and result.error_code == "invalid_input", result
    assert "BLENDMESH_MAX_OBJECT_VERTICES" in result.message and not result.mutated
    assert await bridge.fingerprint() == before


SEQUENCE: list[tuple[str, dict[str, Any]]] = [
    ("object.create", {"primitive": "cube", "name": "Box"}),
    ("object.create", {"primitive": "uv_sphere", "name": "Ball", "location": [1, 0, 1]}),
    ("mesh.bevel", {"object": "Box", "width": 0.1, "segments": 3, "rule": "sharp"}),
    ("mesh.boolean", {"object": "Box", "with": "Ball", "operation": "difference"}),
    ("mesh.extrude", {"object": "Box", "distance": 0.3, "rule": "facing", "axis": "-Z"}),
    ("uv.smart_project", {"object": "Box", "island_margin": 0.01}),
    ("mesh.origin_set", {"object": "Box", "to": "geometry"}),
]


@pytest.mark.clause("001-§determinism.1")
async def test_modelling_sequence_when_replayed_on_a_fresh_scene_hashes_the_same(
    bridge: BridgeProcess,
) -> None:
    hashes = []
    for _ in range(2):
        await bridge.reset()
        for tool, args in SEQUENCE:
            await ok(bridge, tool, **args)
        hashes.append(await bridge.fingerprint())
    assert hashes[0] == hashes[1]
