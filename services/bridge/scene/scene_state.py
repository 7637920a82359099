"""The parts of the canonical snapshot beyond transforms, geometry, modifiers and materials.

Cameras, lights, the world, the active camera, collections, parents' inverse matrices,
visibility, smooth shading and keyframes: each tool that changes one of them must change
the scene hash, or the executor could not prove a rollback or a replay restored it.

Every entry is left out while it holds what a new object or an empty scene has (no
keyframes, no smooth faces, only in the scene collection, ...), so the hash of a scene that
uses none of them is the one it had before they were hashed, and stored revisions still
verify. Where a list can grow with the scene (keyframes) it is hashed like vertices, so an
entry stays small.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import bpy
import mathutils
import numpy as np

from blendmesh_addon.tools.keyframes import fcurves
from blendmesh_addon.tools.lights import LIGHT_SIZE_PROPS
from services.bridge.scene.canonical import DECIMALS, r, rvec
from services.bridge.scene.output_state import object_entries, scene_entries

# Read from here by inspect.py and the tools, beside the names below (the shared bodies').
__all__ = ["LIGHT_SIZE_PROPS", "fcurves"]
_IDENTITY = [[1.0 if i == j else 0.0 for j in range(4)] for i in range(4)]
_IDENTITY_MATRIX = mathutils.Matrix.Identity(4)


def _keys(curve: bpy.types.FCurve) -> list[Any]:
    count = len(curve.keyframe_points)
    co = np.empty(count * 2, dtype=np.float32)
    curve.keyframe_points.foreach_get("co", co)
    rounded = np.round(co.astype(np.float64), DECIMALS) + 0.0
    digest = hashlib.sha256(rounded.tobytes()).hexdigest()
    return [curve.data_path, curve.array_index, count, digest]


def light_values(light: bpy.types.Light) -> dict[str, Any]:
    """Kind, power (W), colour and size (sun: angle in radians) of a light datablock."""
    return {
        "type": light.type,
        "energy": r(light.energy),
        "color": rvec(light.color),
        "size": r(getattr(light, LIGHT_SIZE_PROPS.get(light.type, "shadow_soft_size"))),
    }


def smooth_faces(mesh: bpy.types.Mesh) -> int:
    """How many faces of the mesh are shaded smooth."""
    faces = len(mesh.polygons)
    # Blender keeps shading as the face attribute ``sharp_face`` (absent: every face is
    # smooth) and derives each polygon's ``use_smooth`` from it one face at a time; read
    # as the attribute, a million-face mesh takes a millisecond instead of forty.
    sharp = mesh.attributes.get("sharp_face")
    if sharp is None:
        return faces
    if sharp.domain == "FACE" and sharp.data_type == "BOOLEAN" and len(sharp.data) == faces:
        flags = np.empty(faces, dtype=bool)
        sharp.data.foreach_get("value", flags)
        return faces - int(flags.sum())
    flags = np.empty(faces, dtype=bool)  # an attribute of that name but not Blender's own
    mesh.polygons.foreach_get("use_smooth", flags)
    return int(flags.sum())


# The collections of every object, indexed once for a pass over the whole scene
# (``membership``). ``Object.users_collection`` lists every object of every collection on
# each call, which made hashing the whole scene quadratic in its objects.
_members: dict[int, list[bpy.types.Collection]] | None = None


@contextmanager
def membership() -> Iterator[None]:
    """Within this block, ``collections_of`` answers from one index of every collection.
    The block must not link or unlink objects (a snapshot only reads)."""
    global _members
    index: dict[int, list[bpy.types.Collection]] = {}
    owners = [*bpy.data.collections, *(scene.collection for scene in bpy.data.scenes)]
    for collection in owners:  # the order users_collection gives
        for ob in collection.objects:
            index.setdefault(ob.as_pointer(), []).append(collection)
    _members = index
    try:
        yield
    finally:
        _members = None


def collections_of(ob: bpy.types.Object) -> list[bpy.types.Collection]:
    """``ob.users_collection``, from the index when a ``membership`` block is open."""
    if _members is not None:
        return _members.get(ob.as_pointer(), [])
    return list(ob.users_collection)


def object_state(ob: bpy.types.Object) -> dict[str, Any]:
    """The object's entries of this kind, each only when it is not the default."""
    entry: dict[str, Any] = {}
    if ob.type == "CAMERA":
        entry["camera"] = {"lens": r(ob.data.lens), "type": ob.data.type}
    elif ob.type == "LIGHT":
        entry["light"] = light_values(ob.data)
    parent_inverse = ob.matrix_parent_inverse
    # Most objects' is the identity itself (mathutils compares within one unit in the
    # last place, which rounding would erase anyway): sixteen roundings saved per object.
    if parent_inverse != _IDENTITY_MATRIX:
        inverse = [rvec(row) for row in parent_inverse]
        if inverse != _IDENTITY:
            entry["parent_inverse"] = inverse
    master = bpy.context.scene.collection
    linked = collections_of(ob)
    if linked != [master]:
        entry["collections"] = sorted(c.name for c in linked)
    hidden = [k for k in ("viewport", "render") if getattr(ob, f"hide_{k}")]
    if hidden:
        entry["hidden"] = hidden
    if ob.type == "MESH":
        smooth = smooth_faces(ob.data)
        if smooth:
            entry["smooth_faces"] = smooth
    curves = fcurves(ob)
    if curves:
        entry["keyframes"] = [_keys(c) for c in curves]
    entry.update(object_entries(ob))
    return entry


def background(world: bpy.types.World) -> bpy.types.Node | None:
    """The world's Background shader node (the first by name), if it has one."""
    if world.node_tree is None:
        return None
    found = sorted(
        (n for n in world.node_tree.nodes if n.type == "BACKGROUND"), key=lambda n: n.name
    )
    return found[0] if found else None


def world_values(world: bpy.types.World) -> dict[str, Any]:
    """Colour and strength from the Background node (what renders), else the world colour."""
    node = background(world)
    if node is None:
        return {"name": world.name, "color": rvec(world.color), "strength": None}
    return {
        "name": world.name,
        "color": rvec(node.inputs["Color"].default_value[:3]),
        "strength": r(node.inputs["Strength"].default_value),
    }


def scene_collections(scene: bpy.types.Scene) -> list[bpy.types.Collection]:
    """Every collection under the scene collection, each once, sorted by name."""
    found: dict[str, bpy.types.Collection] = {}
    stack = list(scene.collection.children)
    while stack:
        coll = stack.pop()
        if coll.name not in found:
            found[coll.name] = coll
            stack.extend(coll.children)
    return [found[name] for name in sorted(found)]


def scene_state(scene: bpy.types.Scene) -> dict[str, Any]:
    """The scene's entries of this kind: active camera, world, collection tree and the
    libraries it links."""
    state: dict[str, Any] = {}
    if scene.camera is not None:
        state["active_camera"] = scene.camera.name
    if scene.world is not None:
        state["world"] = world_values(scene.world)
    collections = scene_collections(scene)
    if collections:
        parents: dict[str, list[str]] = {}
        for parent in [scene.collection, *collections]:
            for child in parent.children:
                parents.setdefault(child.name, []).append(parent.name)
        state["collections"] = [[c.name, sorted(parents[c.name])] for c in collections]
    state.update(scene_entries(scene))
    # The library revisions a shot links (ADR 0060): pointing it at another revision is a
    # change even when that revision's data looks the same. Only when there are any, so the
    # hash of a scene that links nothing is unchanged.
    libraries = sorted(library.filepath for library in bpy.data.libraries)
    if libraries:
        state["libraries"] = libraries
    return state
