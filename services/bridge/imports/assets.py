"""``blendmesh/scene.import_asset``: add an asset file's objects to a collection.

Not a planner tool: the executor answers ``scene.import_asset`` (contracts/assets.py),
checks the file, and calls this with a private copy of it. Blender's own importers read
it (OBJ, STL, USD and FBX are built in; glTF is an add-on, enabled on first use) into the
active collection, which is the asked one for the duration. A file that still refers to
data outside itself once imported (an FBX texture stored as a path) is refused with its
objects removed, naming only the last part of each path; the executor restores its
checkpoint all the same, so nothing of a refused or failed import stays. What it made is
held to the geometry budget like any tool's result (ADR 0016): an import whose objects
would be over it is refused the same way, naming the limit and its setting.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

import addon_utils
import bpy

from contracts.assets import asset_problem
from contracts.libraries import parse_link
from contracts.views import AssetImported, AssetParams
from services.bridge.blendfiles import references
from services.bridge.budget import bounded, memory_cap
from services.bridge.said import plain
from services.bridge.scene import digests
from services.bridge.tools.scene import SceneError, SceneRefused, _hidden, _paths_left

_GLTF_ADDON = "io_scene_gltf2"
MAX_ASSET_BYTES = 1024 * 1024 * 1024  # far above any upload limit: a bound, not a policy
log = logging.getLogger("blendmesh.bridge")


def _gltf(path: str) -> Any:
    if not hasattr(bpy.ops.import_scene, "gltf"):
        addon_utils.enable(_GLTF_ADDON, default_set=False)
    return bpy.ops.import_scene.gltf(filepath=path)


# Format -> the importer; none of them runs scripts a file may carry.
_IMPORTERS: dict[str, Callable[[str], Any]] = {
    "gltf": _gltf,
    "glb": _gltf,
    "fbx": lambda p: bpy.ops.wm.fbx_import(filepath=p),
    "obj": lambda p: bpy.ops.wm.obj_import(filepath=p),
    "usda": lambda p: bpy.ops.wm.usd_import(filepath=p),
    "stl": lambda p: bpy.ops.wm.stl_import(filepath=p),
}


def _layer(collection: bpy.types.Collection) -> bpy.types.LayerCollection:
    """The view layer's entry for ``collection`` (a child of the scene's own)."""
    for child in bpy.context.view_layer.layer_collection.children:
        if child.collection == collection:
            return child
    raise SceneError(f"collection {collection.name!r} is not in the view layer")


def _target(name: str) -> bpy.types.Collection:
    found = bpy.data.collections.get(name)
    scene = bpy.context.scene
    if found is None:
        found = bpy.data.collections.new(name)
    if found.name not in scene.collection.children:
        scene.collection.children.link(found)
    return found


def import_asset(want: AssetParams) -> AssetImported:
    """Import ``want.path`` into ``want.collection``; SceneRefused for a file that refers
    to others, SceneError when Blender cannot read it or it holds no objects."""
    path = os.path.abspath(want.path)
    shown = f"the {want.format} file"
    # Checked here too, not only by the executor: whoever calls the bridge, no importer
    # reads a file whose declared sizes its bytes do not back (contracts/gltf_sizes.py).
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_ASSET_BYTES + 1)
    except OSError as err:
        raise SceneError(f"cannot read {shown}: {err.strerror}") from None
    if len(data) > MAX_ASSET_BYTES:
        raise SceneRefused(f"{shown} is larger than {MAX_ASSET_BYTES} bytes")
    problem = asset_problem(data, want.format, shown)
    del data
    if problem is not None:
        raise SceneRefused(problem)
    before = set(bpy.data.objects)
    linked = {library.filepath for library in bpy.data.libraries}
    # An importer is no tool declaring what it touches: the digests are all redone.
    digests.CACHE.clear()
    tallied = bounded.ESTIMATES.current()
    target = _target(want.collection)
    view_layer = bpy.context.view_layer
    active = view_layer.active_layer_collection
    view_layer.active_layer_collection = _layer(target)
    try:
        with memory_cap.capped():
            status = _IMPORTERS[want.format](path)
    except (RuntimeError, TypeError, ValueError, RecursionError, MemoryError) as err:
        log.warning("the %s importer failed: %s", want.format, err)  # the whole of it
        if isinstance(err, MemoryError) or memory_cap.ran_out(str(err)):
            raise SceneError(memory_cap.refusal(shown)) from None
        said = plain(_hidden(str(err), path))
        raise SceneError(f"Blender could not import {shown}: {said}") from None
    finally:
        view_layer.active_layer_collection = active
    added = [ob for ob in bpy.data.objects if ob not in before]
    # A shot's own libraries (ADR 0060), there before the import, are not the asset's.
    own = frozenset(path for path in linked if parse_link(path) is not None)
    if "FINISHED" not in status or not added:
        raise SceneError(
            f"Blender imported nothing from {shown} (it returned {sorted(status)}); "
            "check that the file holds objects and export it again"
        )
    for ob in added:  # an importer may link into the scene's root as well
        if target not in ob.users_collection:
            target.objects.link(ob)
        for other in list(ob.users_collection):
            if other != target:
                other.objects.unlink(ob)
    outside = _paths_left(own)
    if outside:
        raise SceneRefused(
            f"cannot import {shown}: it refers to data outside it, which blendmesh does not "
            f"read: {references.describe(outside)}; export it with its textures embedded",
            changed=True,
        )
    # Judged by the geometry budget like any tool's result (bounded.py): the executor
    # restores its checkpoint, so nothing of an over-budget import stays.
    over = bounded.problem(tallied)
    if over is not None:
        raise SceneRefused(f"cannot import {shown}: {over}", changed=True)
    return AssetImported(collection=target.name, objects=sorted(ob.name for ob in added))
