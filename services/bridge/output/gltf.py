"""``blendmesh/scene.export_gltf``: the current scene as one binary glTF, for a 3D view.

Not a planner tool: the preview worker calls it after a render, on its own bridge, so the
scene it exports is a committed revision loaded for the purpose. Meshes are exported with
their modifiers applied and their materials' base colours; cameras, lights, animation and
custom properties stay out (a viewer lights and frames the scene itself, and a property
may hold anything). The size is bounded: a scene whose triangles alone would go over the
limit is refused before anything is exported (a production scene's export takes seconds and
would only be thrown away), and a file over the limit is deleted and refused.
"""

from __future__ import annotations

import os

import bpy

from contracts.bridge import GltfExport
from services.bridge.tools.scene import SceneError

_NOT_EXPORTED = frozenset({"CAMERA", "LIGHT", "LIGHT_PROBE", "SPEAKER"})


def export_gltf(path: str, max_bytes: int) -> GltfExport:
    """Write the scene to ``path`` as GLB; SceneError when Blender fails or it is too large."""
    path = os.path.abspath(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.exists(path):
        os.remove(path)
    objects = sum(1 for ob in bpy.context.scene.objects if ob.type not in _NOT_EXPORTED)
    least = least_bytes()
    if least > max_bytes:
        raise SceneError(
            f"the scene as glTF would be at least {least} bytes (its triangles' indices "
            f"alone), over the {max_bytes} allowed"
        )
    try:
        result = bpy.ops.export_scene.gltf(
            filepath=path,
            export_format="GLB",
            use_selection=False,
            export_apply=True,
            export_cameras=False,
            export_lights=False,
            export_animations=False,
            export_extras=False,
            export_yup=True,
        )
    except (RuntimeError, TypeError) as err:
        raise SceneError(f"the glTF exporter failed: {err}") from None
    if "FINISHED" not in result or not os.path.isfile(path):
        raise SceneError("the glTF exporter wrote no file")
    size = os.path.getsize(path)
    if size > max_bytes:
        os.remove(path)
        raise SceneError(f"the scene as glTF is {size} bytes, over the {max_bytes} allowed")
    return GltfExport(path=path, bytes=size, objects=objects)


def least_bytes() -> int:
    """A lower bound of the GLB's size: the index bytes of every mesh's triangles, with
    modifiers applied, each mesh counted once (the exporter may share it) at its smallest.
    A face of n corners is n - 2 triangles; an index is 2 bytes, or 4 past 65,535 vertices."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    smallest: dict[str, int] = {}
    for ob in bpy.context.scene.objects:
        if ob.type != "MESH":
            continue
        mesh = ob.evaluated_get(depsgraph).data
        triangles = len(mesh.loops) - 2 * len(mesh.polygons)
        size = triangles * 3 * (4 if len(mesh.vertices) > 65535 else 2)
        key = ob.data.name_full
        smallest[key] = min(size, smallest.get(key, size))
    return sum(smallest.values())
