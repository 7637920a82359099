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
On a big scene most of a fingerprint is objects' and meshes' parts that did not change
since the last one; those are kept between fingerprints and forgotten when a depsgraph
update, undo, redo, a load or a rename says they may have (``Cache``, ADR 0052).
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


class Cache:
    """Each object's and mesh's hashed part by the address of its data, kept from one
    fingerprint to the next (docs/adr/0052-fingerprints-reuse-what-the-depsgraph-did-not-touch.md).

    On a big scene the parts of thousands of objects and meshes are almost all of a
    fingerprint's time, and almost none of them change between two. A part is reused only
    while its block has the same address, name and sizes, no depsgraph update has named it
    since, no name it could refer to has gone, and Blender has not undone, redone or loaded;
    only blocks of the view layer's objects are kept, since only their updates are seen."""

    def __init__(self) -> None:
        self.parts: dict[int, tuple[tuple[Any, ...], str]] = {}
        self.names: frozenset[tuple[str, str]] = frozenset()

    def clear(self) -> None:
        self.parts.clear()
        self.names = frozenset()

    def forget(self, pointer: int) -> None:
        self.parts.pop(pointer, None)

    def digest(self, block: Any, key: tuple[Any, ...], make: Any) -> str:
        """The digest of ``make()``'s parts for ``block``: kept, while ``key`` is the same
        and nothing made us forget it, or made now."""
        pointer = block.as_pointer()
        kept = self.parts.get(pointer)
        if kept is not None and kept[0] == key:
            return kept[1]
        made = _digest(make())
        self.parts[pointer] = (key, made)
        return made


class _Whole:
    """No cache: every part hashed again (a pull, which replaces the session, asks this)."""

    def digest(self, block: Any, key: tuple[Any, ...], make: Any) -> str:
        return _digest(make())


CACHE = Cache()


def fingerprint(full: bool = False) -> str:
    """``content:<sha256>`` of the open session's scene content; ``full`` hashes every
    part again instead of reusing what no update touched (``CACHE``)."""
    cache: Cache | _Whole = _Whole() if full else _checked(CACHE)
    return "content:" + _digest(_parts(cache))


def _digest(parts: Iterable[Any]) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(repr(part).encode("utf-8", "backslashreplace"))
        h.update(b"\0")
    return h.hexdigest()


def watch() -> None:
    """Keep ``CACHE`` true: forget a block each depsgraph update names, and everything
    on undo, redo and load (the add-on's ``register``)."""
    handlers = bpy.app.handlers
    if _updated not in handlers.depsgraph_update_post:
        handlers.depsgraph_update_post.append(_updated)
    for kind in (handlers.undo_post, handlers.redo_post, handlers.load_post):
        if _reset not in kind:
            kind.append(_reset)
    CACHE.clear()


def unwatch() -> None:
    handlers = bpy.app.handlers
    for kind in (handlers.depsgraph_update_post, handlers.undo_post, handlers.redo_post,
                 handlers.load_post):  # fmt: skip
        for handler in (_updated, _reset):
            if handler in kind:
                kind.remove(handler)
    CACHE.clear()


class _Edits:
    """How many times a depsgraph update said content changed, or Blender undid, redid or
    loaded: equal at two moments, no edit Blender reports came between them."""

    count = 0


def edits(settled: bool = False) -> int:
    """``_Edits.count``; ``settled``: once the updates still pending reached ``_updated``
    (a change made from Python is told to the depsgraph only at its next evaluation)."""
    if settled and getattr(bpy.context, "view_layer", None) is not None:
        bpy.context.view_layer.update()
    return _Edits.count


@bpy.app.handlers.persistent
def _updated(scene: Any, depsgraph: Any) -> None:
    for update in depsgraph.updates:
        # What a kept part holds changes with a transform or geometry update. An update
        # without either names every object when one is added (its relations): honoured,
        # it would make each run that adds one hash the whole scene again.
        if not (update.is_updated_transform or update.is_updated_geometry):
            continue
        _Edits.count += 1
        block = getattr(update.id, "original", update.id)
        CACHE.forget(block.as_pointer())
        geometry = update.is_updated_geometry and isinstance(block, bpy.types.Object)
        if geometry and block.data is not None:
            CACHE.forget(block.data.as_pointer())


@bpy.app.handlers.persistent
def _reset(*args: Any) -> None:
    _Edits.count += 1
    CACHE.clear()


def _checked(cache: Cache) -> Cache:
    """``cache`` once every update pending is applied to it and every part that could
    name a block that is gone is dropped."""
    layer = getattr(bpy.context, "view_layer", None)
    if layer is not None:
        layer.update()  # pending updates reach ``_updated`` now, not at the next redraw
    names = frozenset((kind, b.name_full) for kind in _NAMED for b in getattr(bpy.data, kind, ()))
    if cache.names - names:  # a rename or a deletion: a kept part may name the old one
        cache.clear()
    cache.names = names
    return cache


# The blocks a kept part may refer to by name (a parent, a modifier's target, a material).
_NAMED = ("objects", "meshes", "materials", "collections", "node_groups", "images", "texts",
          "actions", "curves", "lights", "cameras")  # fmt: skip


def _parts(cache: Cache | _Whole) -> Iterable[Any]:
    data = bpy.data
    member = _membership(data)
    seen = _in_view_layer()
    whole = _Whole()
    for scene in _sorted(data.scenes):
        yield "scene", scene.name, _props(scene)
        yield "render", _props(scene.render)
        yield "units", _props(scene.unit_settings)
    for collection in _sorted(data.collections):
        yield "collection", collection.name, _props(collection)
        yield sorted(o.name for o in collection.objects)
        yield sorted(c.name for c in collection.children)
    for ob in _sorted(data.objects):
        kept = cache if ob.as_pointer() in seen else whole
        yield from _object(ob, member.get(ob.name_full, []), kept)
    for mesh in _sorted(data.meshes):
        yield from _mesh(mesh, cache if mesh.as_pointer() in seen else whole)
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


def _in_view_layer() -> set[int]:
    """The addresses of the view layer's objects and their data: the blocks whose
    updates the depsgraph reports, so the only ones whose parts are kept."""
    seen: set[int] = set()
    layer = getattr(bpy.context, "view_layer", None)
    for ob in layer.objects if layer is not None else ():
        seen.add(ob.as_pointer())
        if ob.data is not None:
            seen.add(ob.data.as_pointer())
    return seen


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


def _object(ob: Any, collections: list[str], cache: Cache | _Whole) -> Iterable[Any]:
    anim = ob.animation_data
    # Modifiers and constraints by name and type: renaming one tags no update.
    stack = [(m.name, m.type) for m in ob.modifiers] + [(c.name, c.type) for c in ob.constraints]
    yield (
        "object", ob.name, ob.type, ob.data.name if ob.data else None,
        ob.parent.name if ob.parent else None, ob.parent_type, ob.parent_bone,
        ob.hide_viewport, ob.hide_render, _hidden(ob), ob.display_type, collections,
        [(s.link, s.material.name if s.material else None) for s in ob.material_slots],
        anim.action.name if anim and anim.action else None, ob.rotation_mode,
        # Set from Python, a custom property tags no update: read every time.
        _custom(ob), [_custom(mod) for mod in ob.modifiers],
        # The rest is most of an object's time, and changes only with a transform or
        # geometry update that names the object.
        cache.digest(ob, ("object", ob.name_full, *stack), lambda: _object_settings(ob)),
    )  # fmt: skip


def _object_settings(ob: Any) -> Iterable[Any]:
    # The basis, not matrix_world: that one is stale until the depsgraph next evaluates.
    yield _floats(v for row in ob.matrix_basis for v in row)
    yield _floats((*ob.delta_location, *ob.delta_rotation_euler, *ob.delta_scale))
    yield _floats(v for row in ob.matrix_parent_inverse for v in row)
    for mod in ob.modifiers:
        yield "modifier", mod.name, mod.type, _props(mod)
    for con in ob.constraints:
        yield "constraint", con.name, con.type, _props(con)


def _hidden(ob: Any) -> bool | None:
    try:
        return bool(ob.hide_get())
    except RuntimeError:  # not in the view layer
        return None


def _mesh(mesh: Any, cache: Cache | _Whole) -> Iterable[Any]:
    # Its sizes and materials change only with a geometry update, as its vertices do.
    yield "mesh", mesh.name, cache.digest(mesh, ("mesh", mesh.name_full), lambda: _geometry(mesh))


def _geometry(mesh: Any) -> Iterable[Any]:
    yield len(mesh.vertices), len(mesh.edges), len(mesh.polygons), len(mesh.loops)
    yield [m.name if m else None for m in mesh.materials]
    yield _bulk(mesh.vertices, "co", "f", 3)
    yield _bulk(mesh.edges, "vertices", "i", 2)
    yield _bulk(mesh.polygons, "loop_total", "i", 1)
    yield _bulk(mesh.polygons, "use_smooth", "b", 1)
    yield _bulk(mesh.polygons, "material_index", "i", 1)
    yield _bulk(mesh.loops, "vertex_index", "i", 1)
    for layer in mesh.uv_layers:
        yield "uv", layer.name, _bulk(layer.data, "uv", "f", 2)
    yield sorted((a.name, a.domain, a.data_type) for a in mesh.attributes)


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
