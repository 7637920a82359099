"""``blendmesh/scene.export``: the scene as GLB, FBX, OBJ, USD or STL, for a download.

The path is the executor's (a file in its private work folder), never a caller's. Each
exporter is told to write one self-contained file: meshes with their modifiers applied,
no textures copied beside it, no material library, no paths of this host (FBX strips them,
USD keeps only what the scene names). Cameras and lights go where the format has them
(glTF, FBX, USD) as an artist would expect. The size is bounded as the glTF preview's is:
a scene whose triangles alone would be over the limit is refused before anything is
written, and a file over it is deleted and refused.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import bpy

from contracts.exports import FORMATS, ExportParams, SceneExported
from services.bridge.output.gltf import least_bytes
from services.bridge.tools.scene import SceneError, SceneRefused


def _glb(path: str) -> Any:
    return bpy.ops.export_scene.gltf(
        filepath=path,
        export_format="GLB",
        use_selection=False,
        export_apply=True,
        export_extras=False,
        export_yup=True,
    )


def _fbx(path: str) -> Any:
    return bpy.ops.export_scene.fbx(
        filepath=path,
        use_selection=False,
        use_mesh_modifiers=True,
        path_mode="STRIP",
        embed_textures=False,
        use_custom_props=False,
    )


def _obj(path: str) -> Any:
    # No .mtl: a download is one file, and the material library would be a second.
    return bpy.ops.wm.obj_export(filepath=path, export_materials=False, apply_modifiers=True)


def _usd(path: str) -> Any:
    return bpy.ops.wm.usd_export(
        filepath=path,
        export_textures_mode="KEEP",
        convert_world_material=False,
        export_custom_properties=False,
    )


def _stl(path: str) -> Any:
    return bpy.ops.wm.stl_export(filepath=path, ascii_format=False, apply_modifiers=True)


WRITERS: dict[str, Callable[[str], Any]] = {
    "glb": _glb,
    "fbx": _fbx,
    "obj": _obj,
    "usd": _usd,
    "stl": _stl,
}
assert set(WRITERS) == set(FORMATS)


def export_scene(want: ExportParams) -> SceneExported:
    """Write the scene to ``want.path``; SceneError when Blender fails or it is too large."""
    path = os.path.abspath(want.path)
    ending = FORMATS[want.format][0]
    if not path.endswith(ending):  # the exporters read the format from the ending too
        raise SceneRefused(f"an export as {want.format} is written to a file ending {ending}")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.exists(path):
        os.remove(path)
    least = least_bytes()
    if least > want.max_bytes:
        raise SceneRefused(
            f"the scene as {want.format} would be at least {least} bytes (its triangles' "
            f"indices alone), over the {want.max_bytes} a download may hold"
        )
    try:
        result = WRITERS[want.format](path)
    except (RuntimeError, TypeError) as err:
        raise SceneError(f"the {want.format} exporter failed: {err}") from None
    if "FINISHED" not in result or not os.path.isfile(path):
        raise SceneError(f"the {want.format} exporter wrote no file; is the scene empty?")
    size = os.path.getsize(path)
    if size > want.max_bytes:
        os.remove(path)
        raise SceneRefused(
            f"the scene as {want.format} is {size} bytes, over the {want.max_bytes} a "
            "download may hold"
        )
    objects = sum(1 for ob in bpy.context.scene.objects if ob.type in ("MESH", "CURVE", "FONT"))
    return SceneExported(format=want.format, bytes=size, objects=objects)
