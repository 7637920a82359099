"""The shader nodes a material graph may hold, and finding a material and its nodes.

The list is blendmesh's (what an artist's materials are made of); what of it this Blender
has is read from Blender when the bridge starts, so a plan is checked against the shader
node catalog of the Blender that will run it. Script nodes (OSL) and group nodes are not
on it: they would run or load code and data from outside the scene.
"""

from __future__ import annotations

import warnings

import bpy

from ...registry import ToolError

WANTED = (
    "ShaderNodeAddShader", "ShaderNodeAmbientOcclusion", "ShaderNodeBevel",
    "ShaderNodeBrightContrast", "ShaderNodeBsdfDiffuse", "ShaderNodeBsdfGlass",
    "ShaderNodeBsdfPrincipled", "ShaderNodeBsdfTransparent", "ShaderNodeBump",
    "ShaderNodeCombineXYZ", "ShaderNodeDisplacement", "ShaderNodeEmission",
    "ShaderNodeFresnel", "ShaderNodeGamma", "ShaderNodeHueSaturation", "ShaderNodeInvert",
    "ShaderNodeLayerWeight", "ShaderNodeMapRange", "ShaderNodeMapping", "ShaderNodeMath",
    "ShaderNodeMix", "ShaderNodeMixShader", "ShaderNodeNewGeometry", "ShaderNodeNormalMap",
    "ShaderNodeOutputMaterial", "ShaderNodeRGB", "ShaderNodeRGBCurve",
    "ShaderNodeSeparateXYZ", "ShaderNodeTexBrick", "ShaderNodeTexChecker",
    "ShaderNodeTexCoord", "ShaderNodeTexGradient", "ShaderNodeTexImage",
    "ShaderNodeTexNoise", "ShaderNodeTexVoronoi", "ShaderNodeTexWave", "ShaderNodeUVMap",
    "ShaderNodeValToRGB", "ShaderNodeValue", "ShaderNodeVectorMath",
)  # fmt: skip
SHADER_NODES: tuple[str, ...] = tuple(n for n in WANTED if hasattr(bpy.types, n))
MAX_NODES = 256  # per material: far beyond a hand-made material, bounded all the same
MAX_LINKS = 512


def require_material(name: str) -> bpy.types.Material:
    """The material ``name`` with a node tree, or a ToolError saying how to make one."""
    mat = bpy.data.materials.get(name)
    if mat is None:
        raise ToolError(
            "not_found", f"material {name!r} does not exist; create it with shader.create"
        )
    if mat.node_tree is None:
        with warnings.catch_warnings():  # deprecated in 5.0, still how an old one gets nodes
            warnings.simplefilter("ignore", DeprecationWarning)
            mat.use_nodes = True
    return mat


def require_shader_node(mat: bpy.types.Material, node_id: str) -> bpy.types.Node:
    node = mat.node_tree.nodes.get(node_id)
    if node is None:
        names = sorted(n.name for n in mat.node_tree.nodes)
        shown = ", ".join(names[:30]) + (", ..." if len(names) > 30 else "")
        raise ToolError(
            "not_found", f"material {mat.name!r} has no node {node_id!r}; nodes: {shown}"
        )
    return node
