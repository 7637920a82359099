"""Shader graphs the rules grammar names by a word ("a brushed-metal shader"), as the
shader.* calls that build them: data only, so a plan is the same bytes every time.

A preset's nodes are named as its parts are (brushing, scratches, ...), so a later
request or a person in Blender can find and change one.
"""

from __future__ import annotations

from typing import Any

Call = tuple[str, dict[str, Any]]

# Brushed metal: a noise stretched along V for the brushing, into the roughness and a
# bump; with scratches, a fine voronoi's edges through a colour ramp mixed in.
_BRUSHED: list[Call] = [
    ("shader.set_input", {"node_id": "principled", "socket": "Metallic", "value": 1.0}),
    ("shader.set_input", {"node_id": "principled", "socket": "Base Color",
                          "value": [0.8, 0.8, 0.82, 1.0]}),
    ("shader.add_node", {"node_id": "coords", "bl_idname": "ShaderNodeTexCoord"}),
    ("shader.add_node", {"node_id": "stretch", "bl_idname": "ShaderNodeMapping"}),
    ("shader.set_input", {"node_id": "stretch", "socket": "Scale", "value": [1, 40, 1]}),
    ("shader.link", {"from_node": "coords", "from_socket": "UV",
                     "to_node": "stretch", "to_socket": "Vector"}),
    ("shader.add_node", {"node_id": "brushing", "bl_idname": "ShaderNodeTexNoise"}),
    ("shader.set_input", {"node_id": "brushing", "socket": "Scale", "value": 60.0}),
    ("shader.link", {"from_node": "stretch", "from_socket": "Vector",
                     "to_node": "brushing", "to_socket": "Vector"}),
    ("shader.add_node", {"node_id": "bump", "bl_idname": "ShaderNodeBump"}),
    ("shader.set_input", {"node_id": "bump", "socket": "Strength", "value": 0.05}),
    ("shader.link", {"from_node": "brushing", "from_socket": "Fac",
                     "to_node": "bump", "to_socket": "Height"}),
    ("shader.link", {"from_node": "bump", "from_socket": "Normal",
                     "to_node": "principled", "to_socket": "Normal"}),
]  # fmt: skip
_PLAIN_ROUGHNESS: list[Call] = [
    ("shader.link", {"from_node": "brushing", "from_socket": "Fac",
                     "to_node": "principled", "to_socket": "Roughness"}),
]  # fmt: skip
_SCRATCHES: list[Call] = [
    ("shader.add_node", {"node_id": "scratches", "bl_idname": "ShaderNodeTexVoronoi"}),
    ("shader.set_property", {"node_id": "scratches", "property": "feature",
                             "value": "DISTANCE_TO_EDGE"}),
    ("shader.set_input", {"node_id": "scratches", "socket": "Scale", "value": 25.0}),
    ("shader.add_node", {"node_id": "faint", "bl_idname": "ShaderNodeValToRGB"}),
    ("shader.set_ramp", {"node_id": "faint", "stops": [
        {"position": 0.0, "color": [0.35, 0.35, 0.35, 1]},
        {"position": 0.05, "color": [0.2, 0.2, 0.2, 1]}]}),
    ("shader.link", {"from_node": "scratches", "from_socket": "Distance",
                     "to_node": "faint", "to_socket": "Fac"}),
    ("shader.add_node", {"node_id": "rough", "bl_idname": "ShaderNodeMix"}),
    ("shader.set_input", {"node_id": "rough", "socket": "Factor", "value": 0.3}),
    ("shader.link", {"from_node": "faint", "from_socket": "Color",
                     "to_node": "rough", "to_socket": "A"}),
    ("shader.link", {"from_node": "brushing", "from_socket": "Color",
                     "to_node": "rough", "to_socket": "B"}),
    ("shader.link", {"from_node": "rough", "from_socket": "Result",
                     "to_node": "principled", "to_socket": "Roughness"}),
]  # fmt: skip
PRESETS = {"brushed-metal": "BrushedMetal", "brushed metal": "BrushedMetal"}


def brushed_metal(obj: str, scratches: bool) -> list[Call]:
    """The calls that make ``<obj>_BrushedMetal`` and put it on every face of ``obj``."""
    material = f"{obj}_BrushedMetal"[:63]
    body = [*_BRUSHED, *(_SCRATCHES if scratches else _PLAIN_ROUGHNESS)]
    return [
        ("shader.create", {"material": material}),
        *[(tool, {"material": material, **args}) for tool, args in body],
        ("material.assign_faces", {"object": obj, "material": material}),
    ]
