"""``blendmesh/scene.export_gltf``: the current scene as one binary glTF, for a 3D view.

Not a planner tool: the preview worker calls it after a render, on its own bridge, so the
scene it exports is a committed revision loaded for the purpose. Meshes are exported with
their modifiers applied and their materials' base colours; cameras, lights, animation and
custom properties stay out (a viewer lights and frames the scene itself, and a property
may hold anything). The size is bounded: a file over the limit is deleted and refused.
"""

from __future__ import annotations

import os

import bpy

from contracts.bridge import GltfExport

from .tools.scene import SceneError

_NOT_EXPORTED = frozenset({"CAMERA", "LIGHT", "LIGHT_PROBE", "SPEAKER"})


def export_gltf(path: str, max_bytes: int) -> GltfExport:
    """Write the scene to ``path`` as GLB; SceneError when Blender fails or it is too large."""
    path = os.path.abspath(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.exists(path):
        os.remove(path)
    objects = sum(1 for ob in bpy.context.scene.objects if ob.type not in _NOT_EXPORTED)
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
