"""Geometry Nodes graphs: the output is connected, links hold, every node type exists."""

from __future__ import annotations

from typing import Any

from contracts.inspection import (
    InspectedLink,
    InspectedNode,
    InspectedNodeGroup,
    InspectedSocket,
)
from services.guardians.checks.artifact import load, result

GEOMETRY_TREE = "GeometryNodeTree"
GROUP_OUTPUT = "NodeGroupOutput"
GEOMETRY = "GEOMETRY"


def output_connected(repo_path: str) -> dict[str, Any]:
    """OUTPUT_CONNECTED: every group a NODES modifier evaluates hands geometry back.

    Blender takes a modifier's result from the first Geometry input of the group's Group
    Output; when no Group Output has it linked (by a valid, unmuted link) the object
    evaluates to nothing. A modifier without a group passes its input through: not a
    problem here.
    """
    inspection = load(repo_path)
    groups = {group.name: group for group in inspection.node_groups}
    problems: list[str] = []
    checked = 0
    for obj in inspection.objects:
        for modifier in obj.modifiers:
            if modifier.type != "NODES" or modifier.node_group is None:
                continue
            checked += 1
            where = f"object {obj.name!r} modifier {modifier.name!r}"
            group = groups.get(modifier.node_group)
            if group is None:
                problems.append(
                    f"{where} uses node group {modifier.node_group!r}, "
                    "which the scene does not have"
                )
            elif (problem := _output_problem(group)) is not None:
                problems.append(f"{where}: {problem}")
    return result("output_connected", "OUTPUT_CONNECTED", problems, modifiers_checked=checked)


def _output_problem(group: InspectedNodeGroup) -> str | None:
    if group.bl_idname != GEOMETRY_TREE:
        return f"node group {group.name!r} is a {group.bl_idname}, not a {GEOMETRY_TREE}"
    outputs = [node for node in group.nodes if node.bl_idname == GROUP_OUTPUT]
    if not outputs:
        return f"node group {group.name!r} has no Group Output node"
    linked = {(link.to_node, link.to_socket) for link in group.links if _carries(link)}
    first_geometry = [
        (node.name, socket) for node in outputs if (socket := _first_geometry(node)) is not None
    ]
    if not first_geometry:
        return f"the Group Output of node group {group.name!r} has no Geometry socket"
    if any((name, socket.identifier) in linked for name, socket in first_geometry):
        return None
    socket = first_geometry[0][1]
    return (
        f"Group Output geometry socket {socket.name!r} of node group {group.name!r} "
        "is not connected"
    )


def _first_geometry(node: InspectedNode) -> InspectedSocket | None:
    return next((socket for socket in node.inputs if socket.type == GEOMETRY), None)


def _carries(link: InspectedLink) -> bool:
    return link.valid and not link.muted


def links_valid(repo_path: str) -> dict[str, Any]:
    """LINKS_VALID: no link Blender rejects, none to or from a node or socket not there."""
    inspection = load(repo_path)
    problems: list[str] = []
    checked = 0
    for group in inspection.node_groups:
        nodes = {node.name: node for node in group.nodes}
        for link in group.links:
            checked += 1
            problem = _link_problem(link, nodes)
            if problem is not None:
                problems.append(
                    f"node group {group.name!r}: link {link.from_node!r}.{link.from_socket!r}"
                    f" -> {link.to_node!r}.{link.to_socket!r} {problem}"
                )
    return result("links_valid", "LINKS_VALID", problems, links_checked=checked)


def _link_problem(link: InspectedLink, nodes: dict[str, InspectedNode]) -> str | None:
    source, target = nodes.get(link.from_node), nodes.get(link.to_node)
    if source is None:
        return f"dangles: there is no node {link.from_node!r}"
    if target is None:
        return f"dangles: there is no node {link.to_node!r}"
    if all(socket.identifier != link.from_socket for socket in source.outputs):
        return f"dangles: node {source.name!r} has no output {link.from_socket!r}"
    if all(socket.identifier != link.to_socket for socket in target.inputs):
        return f"dangles: node {target.name!r} has no input {link.to_socket!r}"
    if not link.valid:
        return (
            f"is invalid: Blender cannot feed a {link.from_type} output into a "
            f"{link.to_type} input here (incompatible types, or the link closes a loop)"
        )
    return None


def nodes_known(repo_path: str) -> dict[str, Any]:
    """NODES_KNOWN: every node's type is one the Blender that ran the scene registers."""
    inspection = load(repo_path)
    problems: list[str] = []
    checked = 0
    for group in inspection.node_groups:
        for node in group.nodes:
            checked += 1
            if not node.known:
                problems.append(
                    f"node group {group.name!r} node {node.name!r} has type "
                    f"{node.bl_idname!r}, which Blender {inspection.blender_version} "
                    "does not know"
                )
    return result("nodes_known", "NODES_KNOWN", problems, nodes_checked=checked)
