"""The baseline for bench/geonodes.py: the same 25 node calls made directly with bpy.

Run in a child process (the benchmark driver never imports bpy); prints one JSON line with
the seconds each iteration's 25 calls took on a fresh Geometry Nodes target.
"""

from __future__ import annotations

import json
import sys
import time

import bpy
from geonodes_plan import LINKS, NODES, translation


def fresh_target() -> bpy.types.NodeTree:
    bpy.ops.wm.read_factory_settings(use_empty=True)
    mesh = bpy.data.meshes.new("Plane")
    mesh.from_pydata([(-1, -1, 0), (1, -1, 0), (1, 1, 0), (-1, 1, 0)], [], [(0, 1, 2, 3)])
    obj = bpy.data.objects.new("Plane", mesh)
    bpy.context.scene.collection.objects.link(obj)
    group = bpy.data.node_groups.new("GN_Bench", "GeometryNodeTree")
    group.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    group.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    group.nodes.new("NodeGroupInput").name = "group_input"
    group.nodes.new("NodeGroupOutput").name = "group_output"
    obj.modifiers.new("GeometryNodes", "NODES").node_group = group
    return group


def calls(group: bpy.types.NodeTree) -> None:
    """Create, set and link exactly what the benchmark's NODE_TREE response does."""
    for index, node_id in enumerate(NODES):
        node = group.nodes.new("GeometryNodeTransform")
        node.name = node.label = node_id
        node.location = (200 * index, 0)
    for index, node_id in enumerate(NODES):
        group.nodes[node_id].inputs["Translation"].default_value = translation(index)
    for source, target in LINKS:
        group.links.new(group.nodes[source].outputs["Geometry"], group.nodes[target].inputs[0])


def main() -> None:
    runs = int(sys.argv[1])
    seconds = []
    for _ in range(runs):
        group = fresh_target()
        started = time.perf_counter()
        calls(group)
        seconds.append(time.perf_counter() - started)
    print("RESULT " + json.dumps(seconds))


if __name__ == "__main__":
    main()
