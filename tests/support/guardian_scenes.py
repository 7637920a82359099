"""Small inspection artifacts for the guardians' tests, built from the contract's structs.

``good_scene()`` passes every guardian; tests change one thing of it (``msgspec.structs
.replace``) and write it with ``write_repo`` to a folder, the ``repo_path`` of spec 003.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from contracts.inspection import (
    FILE_NAME,
    InspectedLink,
    InspectedMaterial,
    InspectedModifier,
    InspectedNode,
    InspectedNodeGroup,
    InspectedObject,
    InspectedSocket,
    Inspection,
    InterfaceSocket,
    RunPythonStep,
    RunRecord,
    encode,
)


def geometry(identifier: str = "Geometry", linked: bool = False) -> InspectedSocket:
    return InspectedSocket(
        name="Geometry", identifier=identifier, type="GEOMETRY", is_linked=linked
    )


def scatter_group(name: str = "GN_Scatter", connected: bool = True) -> InspectedNodeGroup:
    """Group Input -> Set Position -> Group Output, the last link present when connected."""
    nodes = [
        InspectedNode(
            name="Group Input",
            bl_idname="NodeGroupInput",
            known=True,
            outputs=[geometry("Socket_0")],
        ),
        InspectedNode(
            name="Group Output",
            bl_idname="NodeGroupOutput",
            known=True,
            inputs=[geometry("Socket_1", linked=connected)],
        ),
        InspectedNode(
            name="Set Position",
            bl_idname="GeometryNodeSetPosition",
            known=True,
            inputs=[geometry("Geometry", linked=True)],
            outputs=[geometry()],
        ),
    ]
    links = [
        InspectedLink(
            from_node="Group Input",
            from_socket="Socket_0",
            from_type="GEOMETRY",
            to_node="Set Position",
            to_socket="Geometry",
            to_type="GEOMETRY",
            valid=True,
        ),
    ]
    if connected:
        links.append(
            InspectedLink(
                from_node="Set Position",
                from_socket="Geometry",
                from_type="GEOMETRY",
                to_node="Group Output",
                to_socket="Socket_1",
                to_type="GEOMETRY",
                valid=True,
            )
        )
    return InspectedNodeGroup(
        name=name,
        bl_idname="GeometryNodeTree",
        interface=[
            InterfaceSocket(name="Geometry", in_out="INPUT", socket_type="NodeSocketGeometry"),
            InterfaceSocket(name="Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry"),
        ],
        nodes=nodes,
        links=links,
        users=1,
    )


def mesh_object(name: str, **changes: object) -> InspectedObject:
    base = InspectedObject(
        name=name,
        type="MESH",
        location=[0.0, 0.0, 1.0],
        rotation_euler=[0.0, 0.0, 0.0],
        scale=[1.0, 1.0, 1.0],
        dimensions=[2.0, 2.0, 2.0],
        data=name,
        evaluated_vertices=8,
        evaluated_faces=6,
    )
    return msgspec.structs.replace(base, **changes)


def good_scene() -> Inspection:
    """A plane scattered by Geometry Nodes, a cube child of it, a bevelled sphere; a run
    with one safe and one approved trusted Python step."""
    plane = mesh_object(
        "Plane",
        modifiers=[InspectedModifier(name="GeometryNodes", type="NODES", node_group="GN_Scatter")],
        materials=["Metal"],
        evaluated_faces=1,
    )
    return Inspection(
        scene_id="default",
        revision=3,
        scene_hash="sha256:" + "0" * 64,
        blender_version="5.0.1",
        objects=[
            mesh_object("Box", parent="Plane"),
            plane,
            mesh_object(
                "Sphere",
                modifiers=[InspectedModifier(name="Bevel", type="BEVEL")],
                evaluated_faces=512,
            ),
        ],
        node_groups=[scatter_group()],
        materials=[InspectedMaterial(name="Metal", use_nodes=True, users=1)],
        run=RunRecord(
            run_id="run-1",
            user="ana",
            approved_by="ana",
            python_steps=[
                RunPythonStep(operation_id="op-1", mode="safe", code_sha256="a" * 64),
                RunPythonStep(
                    operation_id="op-2", mode="trusted", code_sha256="b" * 64, approved_by="ana"
                ),
            ],
        ),
    )


def write_repo(folder: Path, inspection: Inspection, gates: bytes | None = None) -> str:
    """Write ``inspection`` (and ``gates.json`` when given) into ``folder``; its path."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / FILE_NAME).write_bytes(encode(inspection))
    if gates is not None:
        (folder / "gates.json").write_bytes(gates)
    return str(folder.absolute())
