"""A fingerprint of what the open session holds, read from Blender's data, not a file.

A pull must know whether the artist changed the scene since the last push or pull.
Comparing saved copies cannot tell: Blender 3.4 writes its window, screen and panel blocks
differently on every save of an unchanged session, so a file digest never matched there.
This reads the content itself — objects and their transforms, parents, collections,
visibility, modifiers, constraints, materials and node trees, mesh geometry, lights,
cameras, the world, keyframes, images, texts and the scene's settings — with the same
calls on Blender 3.4 and 5.0, and leaves out what is not the scene: selection, the active
object, modes, the view and the add-on's own prompt.

Only this add-on compares these fingerprints, each with one it took itself, so they need
not equal the mesh's scene hash; they need to change with the content and only with it.
"""

from __future__ import annotations

import array
import hashlib
import math
from collections.abc import Iterable
from typing import Any

import bpy

SCALARS = frozenset({"BOOLEAN", "INT", "FLOAT", "STRING", "ENUM"})
# Editor state that RNA marks writable on the structs walked generically, and the add-on's
# own link to its scene id (set by a push or a pull, not by the artist's work).
SKIPPED = frozenset(
    [
        "is_active",
        "show_expanded",
        "select",
        "hide_select",
        "frame_current",
        "frame_float",
        "blendmesh_scene",
        "tag",
        "use_extra_user",
    ]
)


Geometry = dict[tuple[Any, ...], tuple[Any, ...]]  # a mesh's identity -> its geometry's hashes


def fingerprint(geometry: Geometry | None = None) -> str:
    """``content:<sha256>`` of the open session's scene content.

    ``geometry`` keeps each mesh's geometry hashes, by its session id, name and sizes, for
    a second fingerprint taken in the same tick of Blender's thread, when nothing but the
    caller could have changed the scene; a caller that changed a mesh's geometry drops
    its entries first (``forget``). Hashing a big scene's geometry is most of a
    fingerprint's time. Blender before 4 has no session ids (an address can be reused by
    the next mesh), so there every fingerprint hashes all of it."""
    h = hashlib.sha256()
    for part in _parts({} if geometry is None else geometry):
        h.update(repr(part).encode("utf-8", "backslashreplace"))
        h.update(b"\0")
    return "content:" + h.hexdigest()


def forget(geometry: Geometry, names: Iterable[str]) -> None:
    """Drop the kept geometry of the meshes named ``names``."""
    gone = set(names)
    for key in [k for k in geometry if k[1] in gone]:
        del geometry[key]


def _parts(geometry: Geometry) -> Iterable[Any]:
    data = bpy.data
    member = _membership(data)
    for scene in _sorted(data.scenes):
        yield "scene", scene.name, _props(scene)
        yield "render", _props(scene.render)
        yield "units", _props(scene.unit_settings)
    for collection in _sorted(data.collections):
        yield "collection", collection.name, _props(collection)
        yield sorted(o.name for o in collection.objects)
        yield sorted(c.name for c in collection.children)
    for ob in _sorted(data.objects):
        yield from _object(ob, member.get(ob.name_full, []))
    for mesh in _sorted(data.meshes):
        yield from _mesh(mesh, geometry)
    for kind in ("lights", "cameras", "curves", "metaballs", "lattices", "armatures"):
        for block in _sorted(getattr(data, kind, ())):
            yield (
                kind,
                block.name,
                _props(block),
                sorted(b.name for b in getattr(block, "bones", ())),
            )
    for kind in ("materials", "worlds", "node_groups"):
        for block in _sorted(getattr(data, kind)):
            tree = block if kind == "node_groups" else block.node_tree
            yield kind, block.name, _props(block), _tree(tree)
    for action in _sorted(data.actions):
        yield from _action(action)
    for image in _sorted(data.images):
        yield "image", image.name, image.filepath, tuple(image.size), image.source
    for text in _sorted(data.texts):
        yield "text", text.name, hashlib.sha256(text.as_string().encode()).hexdigest()
    for library in _sorted(data.libraries):
        yield "library", library.name, library.filepath


def _membership(data: Any) -> dict[str, list[str]]:
    """Each object's collections by name, the scenes' own among them, sorted: what
    ``users_collection`` answers, read in one pass (it walks every collection per object)."""
    member: dict[str, list[str]] = {}
    every = [*data.collections, *(scene.collection for scene in data.scenes)]
    for collection in every:
        for ob in collection.objects:
            member.setdefault(ob.name_full, []).append(collection.name)
    for names in member.values():
        names.sort()
    return member


def _object(ob: Any, collections: list[str]) -> Iterable[Any]:
    yield "object", ob.name, ob.type, ob.data.name if ob.data else None
    yield ob.parent.name if ob.parent else None, ob.parent_type, ob.parent_bone
    # The basis, not matrix_world: that one is stale until the depsgraph next evaluates.
    yield _floats(v for row in ob.matrix_basis for v in row), ob.rotation_mode
    yield _floats((*ob.delta_location, *ob.delta_rotation_euler, *ob.delta_scale))
    yield _floats(v for row in ob.matrix_parent_inverse for v in row)
    yield ob.hide_viewport, ob.hide_render, _hidden(ob), ob.display_type
    yield collections
    yield [(s.link, s.material.name if s.material else None) for s in ob.material_slots]
    for mod in ob.modifiers:
        yield "modifier", mod.name, mod.type, _props(mod), _custom(mod)
    for con in ob.constraints:
        yield "constraint", con.name, con.type, _props(con)
    anim = ob.animation_data
    yield anim.action.name if anim and anim.action else None
    yield _custom(ob)


def _hidden(ob: Any) -> bool | None:
    try:
        return bool(ob.hide_get())
    except RuntimeError:  # not in the view layer
        return None


def _mesh(mesh: Any, geometry: Geometry) -> Iterable[Any]:
    sizes = (len(mesh.vertices), len(mesh.edges), len(mesh.polygons), len(mesh.loops))
    yield "mesh", mesh.name, *sizes[:3]
    uid = getattr(mesh, "session_uid", None)
    key = (uid, mesh.name_full, *sizes, len(mesh.uv_layers))
    kept = geometry.get(key) if uid is not None else None
    if kept is None:
        kept = geometry[key] = (
            _bulk(mesh.vertices, "co", "f", 3),
            _bulk(mesh.edges, "vertices", "i", 2),
            _bulk(mesh.polygons, "loop_total", "i", 1),
            _bulk(mesh.polygons, "use_smooth", "b", 1),
            _bulk(mesh.polygons, "material_index", "i", 1),
            _bulk(mesh.loops, "vertex_index", "i", 1),
            *(("uv", layer.name, _bulk(layer.data, "uv", "f", 2)) for layer in mesh.uv_layers),
        )
    yield from kept
    yield sorted((a.name, a.domain, a.data_type) for a in mesh.attributes)
    yield [m.name if m else None for m in mesh.materials]


def _action(action: Any) -> Iterable[Any]:
    yield "action", action.name
    for curve in sorted(_fcurves(action), key=lambda c: (c.data_path, c.array_index)):
        yield curve.data_path, curve.array_index, _bulk(curve.keyframe_points, "co", "f", 2)
        yield _bulk(curve.keyframe_points, "interpolation", "i", 1)


def _fcurves(action: Any) -> list[Any]:
    """An action's F-curves: on the action up to Blender 4.3, in its layers after."""
    curves = getattr(action, "fcurves", None)
    if curves is not None:
        return list(curves)
    found = []
    for layer in getattr(action, "layers", ()):
        for strip in layer.strips:
            for bag in getattr(strip, "channelbags", ()):
                found.extend(bag.fcurves)
    return found


def _tree(tree: Any) -> Any:
    if tree is None:
        return None
    nodes = []
    for node in sorted(tree.nodes, key=lambda n: n.name):
        inputs = [(s.identifier, _value(getattr(s, "default_value", None))) for s in node.inputs]
        nodes.append((node.name, node.bl_idname, _props(node), inputs))
    links = sorted(
        (lk.from_node.name, lk.from_socket.identifier, lk.to_node.name, lk.to_socket.identifier)
        for lk in tree.links
    )
    return nodes, links


def _props(struct: Any, skip: Iterable[str] = ()) -> list[Any]:
    """The writable scalar, enum and ID-pointer properties of ``struct`` by RNA: what a
    tool or the artist can set on it."""
    found: list[Any] = []
    skipped = SKIPPED.union(skip)
    for prop in struct.bl_rna.properties:
        key = prop.identifier
        if key in skipped or prop.is_readonly:
            continue
        if prop.type == "POINTER":
            value = getattr(struct, key, None)
            if isinstance(value, bpy.types.ID):
                found.append((key, value.name))
        elif prop.type in SCALARS:
            found.append((key, _value(getattr(struct, key, None))))
    return found


def _custom(block: Any) -> list[Any]:
    """Custom properties (a geometry-nodes modifier's inputs live here up to Blender 4)."""
    try:
        keys = sorted(block.keys())
    except (AttributeError, TypeError):
        return []
    return [(k, _value(block[k])) for k in keys if not k.startswith("_RNA_UI")]


def _value(value: Any) -> Any:
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, bpy.types.ID):
        return value.name
    if isinstance(value, str | int | bool) or value is None:
        return value
    if isinstance(value, set):  # an enum of flags
        return sorted(value)
    try:
        items = list(value)
    except TypeError:
        return type(value).__name__
    return [_value(v) for v in items[:64]]


def _float(value: float) -> float | str:
    if not math.isfinite(value):
        return repr(value)
    return round(value, 6) + 0.0  # -0.0 and 0.0 are one value


def _floats(values: Iterable[float]) -> tuple[float | str, ...]:
    return tuple(_float(v) for v in values)


def _bulk(items: Any, attr: str, code: str, width: int) -> str:
    """sha256 of an attribute of every element, read in one call (a big mesh's vertices
    would take seconds one by one)."""
    values = array.array(code, bytes(array.array(code).itemsize * len(items) * width))
    items.foreach_get(attr, values)
    return hashlib.sha256(values.tobytes()).hexdigest()


def _sorted(blocks: Any) -> list[Any]:
    """The blocks a save keeps (Blender drops those nothing uses), in a stable order."""
    kept = [b for b in blocks if b.users > 0 or b.use_fake_user]
    return sorted(kept, key=lambda b: (b.library.filepath if b.library else "", b.name))
