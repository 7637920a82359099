"""Each guardian on small artifacts: the good scene passes, one broken thing fails it with
a message that names what to fix."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from msgspec.structs import replace

from contracts.inspection import (
    FILE_NAME,
    InspectedLink,
    InspectedMaterial,
    InspectedModifier,
    InspectedNode,
    Inspection,
    RunPythonStep,
)
from services.guardians.checks import (
    budget,
    hierarchy,
    modifiers,
    names,
    node_graph,
    python_steps,
    transforms,
)
from services.guardians.checks.artifact import MAX_MESSAGES, ArtifactError
from services.guardians.checks.gate_settings import GateSettings, encode_gate_settings
from tests.support.guardian_scenes import (
    geometry,
    good_scene,
    mesh_object,
    scatter_group,
    write_repo,
)

Guardian = Callable[[str], dict[str, Any]]
GUARDIANS: list[tuple[Guardian, str, str]] = [
    (node_graph.output_connected, "output_connected", "OUTPUT_CONNECTED"),
    (node_graph.links_valid, "links_valid", "LINKS_VALID"),
    (node_graph.nodes_known, "nodes_known", "NODES_KNOWN"),
    (modifiers.modifiers_evaluate, "modifiers_evaluate", "MODIFIERS_EVALUATE"),
    (names.names_valid, "names_valid", "NAMES_VALID"),
    (budget.polygon_budget, "polygon_budget", "POLYGON_BUDGET"),
    (python_steps.python_approved, "python_approved", "PYTHON_APPROVED"),
    (hierarchy.hierarchy_valid, "hierarchy_valid", "HIERARCHY_VALID"),
    (transforms.transforms_sane, "transforms_sane", "TRANSFORMS_SANE"),
]


def run(guardian: Guardian, folder: Path, scene: Inspection, gates: bytes | None = None) -> Any:
    return guardian(write_repo(folder, scene, gates))


def failed(output: dict[str, Any], gate: str, *needles: str) -> str:
    """The output failed ``gate``; its one message holds every needle. Returns it."""
    assert output["gate"] == gate and output["passed"] is False, output
    assert output["problems"] == len(output["messages"]) == 1, output["messages"]
    message: str = output["messages"][0]
    for needle in needles:
        assert needle in message, message
    return message


def with_group(scene: Inspection, **changes: Any) -> Inspection:
    return replace(scene, node_groups=[replace(scene.node_groups[0], **changes)])


def with_object(scene: Inspection, which: str, **changes: Any) -> Inspection:
    objects = [replace(o, **changes) if o.name == which else o for o in scene.objects]
    return replace(scene, objects=objects)


@pytest.mark.parametrize(("guardian", "tool", "gate"), GUARDIANS)
def test_guardian_when_scene_good_passes(
    tmp_path: Path, guardian: Guardian, tool: str, gate: str
) -> None:
    output = run(guardian, tmp_path, good_scene())
    assert (output["tool"], output["gate"], output["passed"]) == (tool, gate, True)
    assert output["messages"] == [] and output["problems"] == 0


@pytest.mark.parametrize(("guardian", "tool", "gate"), GUARDIANS)
def test_guardian_when_artifact_missing_raises(
    tmp_path: Path, guardian: Guardian, tool: str, gate: str
) -> None:
    with pytest.raises(FileNotFoundError) as missing:
        guardian(str(tmp_path))
    assert missing.value.filename == str(tmp_path / FILE_NAME)


@pytest.mark.parametrize(("guardian", "tool", "gate"), GUARDIANS)
def test_guardian_when_artifact_unreadable_raises(
    tmp_path: Path, guardian: Guardian, tool: str, gate: str
) -> None:
    (tmp_path / FILE_NAME).write_bytes(b'{"not": "an artifact"}')
    with pytest.raises(msgspec.ValidationError, match="unknown field `not`"):
        guardian(str(tmp_path))


def test_guardian_when_artifact_is_a_fifo_raises_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / FILE_NAME)
    with pytest.raises(ArtifactError, match="not a regular file"):
        node_graph.output_connected(str(tmp_path))


def test_guardian_when_artifact_of_another_version_raises(tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match="version 2"):
        run(node_graph.nodes_known, tmp_path, replace(good_scene(), version=2))


# OUTPUT_CONNECTED ---------------------------------------------------------------------------


def test_output_connected_when_group_output_unlinked_fails_naming_it(tmp_path: Path) -> None:
    scene = replace(good_scene(), node_groups=[scatter_group(connected=False)])
    failed(
        run(node_graph.output_connected, tmp_path, scene),
        "OUTPUT_CONNECTED",
        "object 'Plane' modifier 'GeometryNodes'",
        "Group Output geometry socket 'Geometry' of node group 'GN_Scatter' is not connected",
    )


def test_output_connected_when_link_muted_or_invalid_fails(tmp_path: Path) -> None:
    group = scatter_group()
    last = group.links[-1]
    for broken in (replace(last, muted=True), replace(last, valid=False)):
        scene = with_group(good_scene(), links=[*group.links[:-1], broken])
        failed(run(node_graph.output_connected, tmp_path, scene), "OUTPUT_CONNECTED")


def test_output_connected_when_group_missing_fails(tmp_path: Path) -> None:
    scene = replace(good_scene(), node_groups=[])
    failed(
        run(node_graph.output_connected, tmp_path, scene),
        "OUTPUT_CONNECTED",
        "uses node group 'GN_Scatter', which the scene does not have",
    )


def test_output_connected_when_no_group_output_node_fails(tmp_path: Path) -> None:
    group = scatter_group()
    nodes = [node for node in group.nodes if node.bl_idname != "NodeGroupOutput"]
    scene = with_group(good_scene(), nodes=nodes, links=group.links[:1])
    failed(
        run(node_graph.output_connected, tmp_path, scene),
        "OUTPUT_CONNECTED",
        "node group 'GN_Scatter' has no Group Output node",
    )


def test_output_connected_when_modifier_has_no_group_passes(tmp_path: Path) -> None:
    empty = InspectedModifier(name="GeometryNodes", type="NODES")
    scene = with_object(good_scene(), "Plane", modifiers=[empty])
    output = run(node_graph.output_connected, tmp_path, scene)
    assert output["passed"] is True and output["modifiers_checked"] == 0


# LINKS_VALID ------------------------------------------------------------------------------


def test_links_valid_when_link_type_incompatible_fails_naming_types(tmp_path: Path) -> None:
    group = scatter_group()
    bad = replace(group.links[0], valid=False, from_type="VALUE")
    scene = with_group(good_scene(), links=[bad, *group.links[1:]])
    failed(
        run(node_graph.links_valid, tmp_path, scene),
        "LINKS_VALID",
        "node group 'GN_Scatter': link 'Group Input'.'Socket_0' -> 'Set Position'.'Geometry'",
        "VALUE output into a GEOMETRY input",
    )


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"from_node": "Ghost"}, "there is no node 'Ghost'"),
        ({"to_node": "Ghost"}, "there is no node 'Ghost'"),
        ({"from_socket": "Socket_9"}, "node 'Group Input' has no output 'Socket_9'"),
        ({"to_socket": "Offset"}, "node 'Set Position' has no input 'Offset'"),
    ],
)
def test_links_valid_when_link_dangles_fails(
    tmp_path: Path, change: dict[str, str], needle: str
) -> None:
    group = scatter_group()
    scene = with_group(good_scene(), links=[replace(group.links[0], **change), group.links[1]])
    failed(run(node_graph.links_valid, tmp_path, scene), "LINKS_VALID", "dangles", needle)


# NODES_KNOWN ------------------------------------------------------------------------------


def test_nodes_known_when_node_type_unknown_fails_naming_it(tmp_path: Path) -> None:
    group = scatter_group()
    ghost = InspectedNode(name="Scatter", bl_idname="GeometryNodeScatterMagic", known=False)
    scene = with_group(good_scene(), nodes=[*group.nodes, ghost])
    failed(
        run(node_graph.nodes_known, tmp_path, scene),
        "NODES_KNOWN",
        "node group 'GN_Scatter' node 'Scatter' has type 'GeometryNodeScatterMagic'",
        "Blender 5.0.1",
    )


# MODIFIERS_EVALUATE -----------------------------------------------------------------------


def test_modifiers_evaluate_when_modifier_errors_fails_quoting_blender(tmp_path: Path) -> None:
    bevel = InspectedModifier(name="Bevel", type="BEVEL", error="Cannot bevel a curve")
    scene = with_object(good_scene(), "Sphere", modifiers=[bevel])
    failed(
        run(modifiers.modifiers_evaluate, tmp_path, scene),
        "MODIFIERS_EVALUATE",
        "object 'Sphere' modifier 'Bevel' (BEVEL) fails to evaluate: Cannot bevel a curve",
    )


# NAMES_VALID ------------------------------------------------------------------------------


def test_names_valid_when_name_too_long_fails(tmp_path: Path) -> None:
    long = "é" * 32  # 32 characters, 64 bytes
    scene = replace(good_scene(), materials=[InspectedMaterial(name=long)])
    failed(
        run(names.names_valid, tmp_path, scene),
        "NAMES_VALID",
        f"material name {long!r} is longer than Blender's 63 bytes",
    )


def test_names_valid_when_name_at_limit_passes(tmp_path: Path) -> None:
    scene = replace(good_scene(), materials=[InspectedMaterial(name="M" * 63)])
    assert run(names.names_valid, tmp_path, scene)["passed"] is True


def test_names_valid_when_control_character_fails(tmp_path: Path) -> None:
    scene = with_object(good_scene(), "Box", name="Bo\x07x")
    failed(
        run(names.names_valid, tmp_path, scene),
        "NAMES_VALID",
        "object name 'Bo\\x07x' holds the control character U+0007",
    )


def test_names_valid_when_duplicated_fails_once_per_name(tmp_path: Path) -> None:
    scene = good_scene()
    scene = replace(scene, objects=[*scene.objects, mesh_object("Box"), mesh_object("Box")])
    failed(
        run(names.names_valid, tmp_path, scene),
        "NAMES_VALID",
        "object name 'Box' is used more than once",
    )


def test_names_valid_when_modifier_names_repeat_fails(tmp_path: Path) -> None:
    bevels = [InspectedModifier(name="Bevel", type="BEVEL")] * 2
    scene = with_object(good_scene(), "Sphere", modifiers=bevels)
    failed(
        run(names.names_valid, tmp_path, scene),
        "NAMES_VALID",
        "modifier of object 'Sphere' name 'Bevel' is used more than once",
    )


# POLYGON_BUDGET ---------------------------------------------------------------------------


def test_polygon_budget_when_default_uses_one_million(tmp_path: Path) -> None:
    output = run(budget.polygon_budget, tmp_path, good_scene())
    assert (output["faces"], output["budget"]) == (519, 1_000_000)


def test_polygon_budget_when_over_budget_from_gates_json_fails_naming_heaviest(
    tmp_path: Path,
) -> None:
    gates = encode_gate_settings(GateSettings(polygon_budget=500))
    output = run(budget.polygon_budget, tmp_path, good_scene(), gates)
    failed(
        output,
        "POLYGON_BUDGET",
        "519 faces, over the polygon budget of 500",
        "'Sphere' (512), 'Box' (6), 'Plane' (1)",
    )
    assert (output["faces"], output["budget"]) == (519, 500)


def test_polygon_budget_when_exactly_at_budget_passes(tmp_path: Path) -> None:
    gates = b'{"polygon_budget": 519}'
    assert run(budget.polygon_budget, tmp_path, good_scene(), gates)["passed"] is True


@pytest.mark.parametrize(
    ("gates", "said"),
    [
        (b"{", "truncated"),
        (b'{"polygon_budget": -1}', "Expected `int` >= 0 - at `$.polygon_budget`"),
        (b'{"polygon_budget": true}', "Expected `int`, got `bool` - at `$.polygon_budget`"),
        (b'{"polygon_budjet": 5}', "unknown field `polygon_budjet`"),
    ],
)
def test_polygon_budget_when_gates_json_bad_raises(tmp_path: Path, gates: bytes, said: str) -> None:
    with pytest.raises(msgspec.DecodeError) as refused:
        run(budget.polygon_budget, tmp_path, good_scene(), gates)
    assert said in str(refused.value)


# PYTHON_APPROVED --------------------------------------------------------------------------


def with_steps(scene: Inspection, *steps: RunPythonStep) -> Inspection:
    assert scene.run is not None
    return replace(scene, run=replace(scene.run, python_steps=list(steps)))


def test_python_approved_when_trusted_step_unapproved_fails_naming_operation(
    tmp_path: Path,
) -> None:
    step = RunPythonStep(operation_id="op-7", mode="trusted", code_sha256="c" * 64)
    failed(
        run(python_steps.python_approved, tmp_path, with_steps(good_scene(), step)),
        "PYTHON_APPROVED",
        "operation 'op-7' ran trusted Python",
        "c" * 64,
        "no approval on record",
    )


def test_python_approved_when_approved_by_policy_alone_fails(tmp_path: Path) -> None:
    step = RunPythonStep(
        operation_id="op-7", mode="trusted", code_sha256="c" * 64, approved_by="policy"
    )
    failed(
        run(python_steps.python_approved, tmp_path, with_steps(good_scene(), step)),
        "PYTHON_APPROVED",
        "approved by policy alone",
    )


def test_python_approved_when_safe_steps_only_or_no_run_passes(tmp_path: Path) -> None:
    safe = RunPythonStep(operation_id="op-1", mode="safe", code_sha256="a" * 64)
    assert run(python_steps.python_approved, tmp_path, with_steps(good_scene(), safe))["passed"]
    output = run(python_steps.python_approved, tmp_path, replace(good_scene(), run=None))
    assert output["passed"] is True and output["python_steps"] == 0


# HIERARCHY_VALID --------------------------------------------------------------------------


def test_hierarchy_valid_when_parent_missing_fails(tmp_path: Path) -> None:
    scene = with_object(good_scene(), "Box", parent="Ghost")
    failed(
        run(hierarchy.hierarchy_valid, tmp_path, scene),
        "HIERARCHY_VALID",
        "object 'Box' has parent 'Ghost', which the scene does not have",
    )


def test_hierarchy_valid_when_cycle_fails_once_naming_it(tmp_path: Path) -> None:
    scene = with_object(good_scene(), "Plane", parent="Sphere")
    scene = with_object(scene, "Sphere", parent="Box")
    failed(
        run(hierarchy.hierarchy_valid, tmp_path, scene),
        "HIERARCHY_VALID",
        "objects are parented in a cycle: 'Box' -> 'Plane' -> 'Sphere' -> 'Box'",
    )


def test_hierarchy_valid_when_own_parent_fails(tmp_path: Path) -> None:
    scene = with_object(good_scene(), "Sphere", parent="Sphere")
    failed(
        run(hierarchy.hierarchy_valid, tmp_path, scene),
        "HIERARCHY_VALID",
        "object 'Sphere' is its own parent",
    )


def test_hierarchy_valid_when_chain_long_passes_without_recursion(tmp_path: Path) -> None:
    chain = [mesh_object(f"O{i}", parent=f"O{i - 1}" if i else None) for i in range(5000)]
    output = run(hierarchy.hierarchy_valid, tmp_path, replace(good_scene(), objects=chain))
    assert output["passed"] is True and output["objects_checked"] == 5000


# TRANSFORMS_SANE --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"scale": [1.0, 0.0, 1.0]}, "object 'Box' scale.y is 0"),
        ({"scale": [1.0, 1.0, 2e4]}, "object 'Box' scale.z is 20000, beyond ±10000"),
        ({"location": [-2e6, 0.0, 0.0]}, "object 'Box' location.x is -2e+06, beyond ±1e+06"),
        ({"rotation_euler": [0.0, 0.0]}, "object 'Box' rotation_euler has 2 components"),
    ],
)
def test_transforms_sane_when_transform_extreme_fails(
    tmp_path: Path, change: dict[str, Any], needle: str
) -> None:
    scene = with_object(good_scene(), "Box", **change)
    failed(run(transforms.transforms_sane, tmp_path, scene), "TRANSFORMS_SANE", needle)


def test_transforms_sane_when_negative_scale_passes(tmp_path: Path) -> None:
    scene = with_object(good_scene(), "Box", scale=[-1.0, 1.0, 1.0])
    assert run(transforms.transforms_sane, tmp_path, scene)["passed"] is True


def test_transforms_sane_when_number_out_of_range_raises(tmp_path: Path) -> None:
    """JSON has no infinity; a number too large for a double does not decode, so the
    guardian raises (fail-closed) rather than judging a scene it cannot read."""
    text = write_repo(tmp_path, with_object(good_scene(), "Box", location=[0.0, 0.0, 7.0]))
    artifact = Path(text, FILE_NAME)
    artifact.write_bytes(artifact.read_bytes().replace(b"[0.0,0.0,7.0]", b"[0.0,0.0,1e999]"))
    with pytest.raises(msgspec.ValidationError) as refused:
        transforms.transforms_sane(text)
    assert "Number out of range - at `$.objects[0].location[2]`" in str(refused.value)


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_transforms_sane_when_number_not_finite_names_it(value: float) -> None:
    problem = transforms._problem("rotation_euler", value)
    assert problem is not None and "not a finite number" in problem


# Shared: messages are capped ---------------------------------------------------------------


def test_guardian_when_many_problems_caps_messages_and_counts_all(tmp_path: Path) -> None:
    objects = [mesh_object(f"O{i:03}", scale=[0.0, 1.0, 1.0]) for i in range(30)]
    output = run(transforms.transforms_sane, tmp_path, replace(good_scene(), objects=objects))
    assert output["problems"] == 30
    assert len(output["messages"]) == MAX_MESSAGES + 1
    assert output["messages"][-1] == "... and 10 more like these"


def test_scene_fixture_sockets_are_what_the_guardians_read() -> None:
    """The fixture itself: the Group Output's geometry input is the one its link targets."""
    group = scatter_group()
    output = next(node for node in group.nodes if node.bl_idname == "NodeGroupOutput")
    assert output.inputs == [geometry("Socket_1", linked=True)]
    assert isinstance(group.links[-1], InspectedLink)
