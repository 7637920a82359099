"""The change list of a revision, from two inspection artifacts (contracts/diff.py)."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts import changes as bounds
from contracts.change_text import change_lines
from contracts.changes import ChangeList, Review
from contracts.diff import diff
from contracts.inspection import (
    InspectedData,
    InspectedLink,
    InspectedMaterial,
    InspectedModifier,
    InspectedNode,
    InspectedNodeGroup,
    InspectedObject,
    InspectedSocket,
    Inspection,
)
from contracts.reviews import MAX_NOTE_CHARS, ReviewRefused, check_review


def scene(revision: int, **parts: object) -> Inspection:
    return Inspection(
        scene_id="shot", revision=revision, scene_hash="h", blender_version="5.0.0", **parts
    )


def group(value: float, linked: bool = True) -> InspectedNodeGroup:
    socket = InspectedSocket(name="Offset", identifier="Offset", type="VECTOR", is_linked=False)
    nodes = [
        InspectedNode(name="Group Input", bl_idname="NodeGroupInput", known=True),
        InspectedNode(
            name="Set Position",
            bl_idname="GeometryNodeSetPosition",
            known=True,
            inputs=[msgspec.structs.replace(socket, default=[0.0, 0.0, value])],
        ),
    ]
    link = InspectedLink(
        from_node="Group Input",
        from_socket="Socket_0",
        from_type="GEOMETRY",
        to_node="Set Position",
        to_socket="Geometry",
        to_type="GEOMETRY",
        valid=True,
    )
    return InspectedNodeGroup(
        name="Lift",
        bl_idname="GeometryNodeTree",
        nodes=nodes,
        links=[link] if linked else [],
        users=1,
    )


def test_diff_when_every_kind_changes_names_each_with_before_and_after() -> None:
    cube = InspectedObject(
        name="Cube",
        type="MESH",
        location=[0.0, 0.0, 0.0],
        data="CubeMesh",
        modifiers=[InspectedModifier(name="Bevel", type="BEVEL", properties={"segments": 1})],
        materials=["Red"],
    )
    before = scene(
        3,
        objects=[cube, InspectedObject(name="Old", type="EMPTY")],
        data=[InspectedData(name="CubeMesh", type="MESH", vertices=8, edges=12, faces=6)],
        materials=[InspectedMaterial(name="Red", base_color=[1.0, 0.0, 0.0, 1.0], users=1)],
        node_groups=[group(0.5)],
        libraries={"props": 3},
    )
    moved = msgspec.structs.replace(
        cube,
        location=[1.0, 0.0, 0.0],
        modifiers=[
            InspectedModifier(
                name="Bevel", type="BEVEL", show_viewport=False, properties={"segments": 3}
            ),
            InspectedModifier(name="Array", type="ARRAY"),
        ],
    )
    after = scene(
        4,
        objects=[moved, InspectedObject(name="New", type="MESH", data="NewMesh")],
        data=[
            InspectedData(name="CubeMesh", type="MESH", vertices=26, edges=48, faces=24),
            InspectedData(name="NewMesh", type="MESH", vertices=4, edges=4, faces=1),
        ],
        materials=[InspectedMaterial(name="Red", base_color=[0.0, 0.0, 1.0, 1.0], users=1)],
        node_groups=[group(2.0, linked=False)],
        libraries={"props": 4, "sets": 1},
    )

    found = diff(before, after)

    entries = {(c.kind, c.name): c for c in found.changes}
    assert {k: c.action for k, c in entries.items()} == {
        ("object", "Cube"): "changed",
        ("object", "New"): "added",
        ("object", "Old"): "removed",
        ("data", "CubeMesh"): "changed",
        ("data", "NewMesh"): "added",
        ("material", "Red"): "changed",
        ("modifier", "Cube/Array"): "added",
        ("modifier", "Cube/Bevel"): "changed",
        ("node_group", "Lift"): "changed",
        ("library", "props"): "changed",
        ("library", "sets"): "added",
    }
    props = {p.name: (p.before, p.after) for p in entries[("object", "Cube")].properties}
    assert props["location"] == ([0.0, 0.0, 0.0], [1.0, 0.0, 0.0])
    assert props["modifiers"] == (["Bevel"], ["Bevel", "Array"])
    data = {p.name: (p.before, p.after) for p in entries[("data", "CubeMesh")].properties}
    assert data["vertices"] == (8, 26)
    props_library = entries[("library", "props")].properties
    assert [(p.name, p.before, p.after) for p in props_library] == [("revision", 3, 4)]
    red = entries[("material", "Red")].properties
    assert [(p.name, p.before, p.after) for p in red] == [
        ("base_color", [1.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0, 1.0])
    ]
    lift = {p.name: (p.before, p.after) for p in entries[("node_group", "Lift")].properties}
    assert lift["node Set Position input Offset"] == ([0.0, 0.0, 0.5], [0.0, 0.0, 2.0])
    assert lift["link Group Input.Socket_0 -> Set Position.Geometry"] == ("valid", None)
    bevel = entries[("modifier", "Cube/Bevel")].properties
    assert [(p.name, p.before, p.after) for p in bevel] == [
        ("segments", 1, 3),
        ("show_viewport", True, False),
    ]
    assert found.base == 3 and found.revision == 4
    assert found.counts["object"] == {"changed": 1, "added": 1, "removed": 1}


def test_diff_when_a_material_loses_its_last_user_lists_it_removed() -> None:
    red = InspectedMaterial(name="Red", users=1)
    before = scene(1, materials=[red])
    after = scene(2, materials=[msgspec.structs.replace(red, users=0)])

    [gone] = diff(before, after).changes

    assert (gone.kind, gone.name, gone.action) == ("material", "Red", "removed")


def test_diff_when_the_scene_is_new_lists_everything_as_added() -> None:
    after = scene(1, objects=[InspectedObject(name="Box", type="MESH", location=[0.0, 1.0, 2.0])])

    found = diff(None, after)

    assert found.base is None
    [box] = found.changes
    assert (box.kind, box.action) == ("object", "added")
    assert {p.name: p.after for p in box.properties}["location"] == [0.0, 1.0, 2.0]
    assert "light" not in {p.name for p in box.properties}  # nothing to say of absent parts
    assert "against an empty scene" in change_lines(found)[0]


def test_diff_when_more_changes_than_the_bound_counts_the_rest() -> None:
    many = [InspectedObject(name=f"Box{i:05d}", type="MESH") for i in range(bounds.MAX_CHANGES + 7)]

    found = diff(scene(1), scene(2, objects=many))

    assert len(found.changes) == bounds.MAX_CHANGES
    assert found.more_changes == 7
    assert found.counts == {"object": {"added": bounds.MAX_CHANGES + 7}}
    assert change_lines(found)[-1] == "  ... and 7 more changes (the list shows the first)"


def test_diff_when_a_value_is_huge_cuts_it_and_says_so() -> None:
    long = [f"Material{i:04d}" for i in range(400)]
    before = scene(1, objects=[InspectedObject(name="Box", type="MESH")])
    after = scene(2, objects=[InspectedObject(name="Box", type="MESH", materials=long)])

    [box] = diff(before, after).changes

    [materials] = box.properties
    assert materials.cut and isinstance(materials.after, str)
    assert len(materials.after) == bounds.MAX_VALUE_CHARS
    assert any("(cut)" in line for line in change_lines(diff(before, after)))


def test_review_when_the_note_is_over_the_limit_is_refused_naming_the_limit() -> None:
    with pytest.raises(ReviewRefused, match=f"more than the {MAX_NOTE_CHARS}"):
        check_review("approve", "x" * (MAX_NOTE_CHARS + 1))
    with pytest.raises(ReviewRefused, match="approve the revision or request changes"):
        check_review("merge", "")
    assert check_review("request_changes", "y" * MAX_NOTE_CHARS) == "request_changes"


def test_change_lines_when_reviewed_show_the_verdict_and_note() -> None:
    listed = ChangeList(
        scene_id="shot",
        revision=2,
        base=1,
        reviews=[Review(reviewer="lead", verdict="request_changes", note="too shiny")],
    )
    assert change_lines(listed)[-1] == "review: lead requested changes: too shiny"


names = st.sampled_from(["A", "B", "C", "D"])
vector = st.lists(st.sampled_from([0.0, 1.0, -2.5]), min_size=3, max_size=3)
objects = st.builds(
    InspectedObject,
    name=names,
    type=st.sampled_from(["MESH", "EMPTY"]),
    location=vector,
    materials=st.lists(st.sampled_from(["M1", "M2"]), max_size=2),
    modifiers=st.lists(
        st.builds(InspectedModifier, name=names, type=st.sampled_from(["BEVEL", "ARRAY"])),
        max_size=2,
    ),
    hide_render=st.booleans(),
)
materials = st.builds(
    InspectedMaterial,
    name=names,
    base_color=st.lists(st.floats(0, 1), max_size=4),
    users=st.integers(0, 2),
)
data = st.builds(InspectedData, name=names, type=st.just("MESH"), vertices=st.integers(0, 10**6))


@st.composite
def inspections(draw: st.DrawFn, revision: int) -> Inspection:
    def unique(items: list) -> list:
        return list({item.name: item for item in items}.values())

    return scene(
        revision,
        objects=unique(draw(st.lists(objects, max_size=4))),
        materials=unique(draw(st.lists(materials, max_size=3))),
        data=unique(draw(st.lists(data, max_size=3))),
    )


@settings(max_examples=150, deadline=None)
@given(a=inspections(1), b=inspections(2))
def test_diff_when_run_both_ways_is_its_own_mirror_and_empty_on_itself(
    a: Inspection, b: Inspection
) -> None:
    forward, backward = diff(a, b), diff(b, a)
    mirror = {"added": "removed", "removed": "added", "changed": "changed"}
    assert {(c.kind, c.name, mirror[c.action]) for c in forward.changes} == {
        (c.kind, c.name, c.action) for c in backward.changes
    }
    for there in forward.changes:
        [back] = [c for c in backward.changes if (c.kind, c.name) == (there.kind, there.name)]
        if there.action == "changed":
            assert [(p.name, p.before, p.after) for p in there.properties] == [
                (p.name, p.after, p.before) for p in back.properties
            ]
            assert there.properties, "a changed entry names what changed"
    assert diff(a, a).changes == [] and diff(b, b).counts == {}
    total = sum(n for per_kind in forward.counts.values() for n in per_kind.values())
    assert total == len(forward.changes) + forward.more_changes


@settings(max_examples=60, deadline=None)
@given(
    count=st.integers(0, 1200),
    width=st.integers(0, 3000),
)
def test_diff_when_inputs_grow_stays_within_its_bounds(count: int, width: int) -> None:
    big = InspectedObject(name="Big", type="MESH", materials=["m" * width])
    after = scene(
        2, objects=[big, *(InspectedObject(name=f"O{i}", type="MESH") for i in range(count))]
    )

    found = diff(scene(1, objects=[InspectedObject(name="Big", type="MESH")]), after)

    assert len(found.changes) <= bounds.MAX_CHANGES
    assert found.more_changes == max(0, count + 1 - bounds.MAX_CHANGES)
    for change in found.changes:
        assert len(change.properties) <= bounds.MAX_PROPERTIES
        for prop in change.properties:
            for value in (prop.before, prop.after):
                text = value if prop.cut else msgspec.json.encode(value).decode()
                assert len(text) <= bounds.MAX_VALUE_CHARS


def test_diff_when_an_override_is_edited_names_its_library_and_overridden_properties() -> None:
    hero = InspectedObject(
        name="Hero", type="MESH", location=[2.5, 0.0, 0.0], library="characters@1",
        overridden=["location"],
    )  # fmt: skip
    edited = msgspec.structs.replace(
        hero, location=[4.0, 0.0, 0.0], library="characters@2", overridden=["location", "scale"]
    )
    before = scene(1, objects=[hero], libraries={"characters": 1})
    after = scene(2, objects=[edited], libraries={"characters": 2})

    [entry, library] = diff(before, after).changes

    assert (entry.kind, entry.name, library.kind, library.name) == (
        "object", "Hero", "library", "characters",
    )  # fmt: skip
    assert {p.name: (p.before, p.after) for p in entry.properties} == {
        "library": ("characters@1", "characters@2"),
        "location": ([2.5, 0.0, 0.0], [4.0, 0.0, 0.0]),
        "overridden": (["location"], ["location", "scale"]),
    }
    lines = change_lines(diff(before, after))
    assert any("revision: 1 -> 2" in line for line in lines), lines
