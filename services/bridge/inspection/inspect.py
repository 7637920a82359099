"""``blendmesh/scene.inspect``: the scene the bridge holds, described for the guardians.

The description is the scene part of the inspection artifact (``contracts.inspection``):
objects, modifiers, node groups and materials in a stable order, floats rounded, so the
same scene describes to the same bytes on every machine. Counts come from the evaluated
depsgraph, which is what renders and what a guardian means by "the mesh".

Blender keeps a modifier's own error (``ModifierData.error``, the red text of its panel)
out of the Python API. What it does expose is the Geometry Nodes log
(``NodesModifier.node_warnings``, filled when the active depsgraph evaluates), so a NODES
modifier reports those; beyond that, the checks Blender makes before it evaluates a
modifier at all (a group with no Group Output, a Boolean without an operand) are made
here and reported in the same field, since such a modifier silently does nothing.

A commit's description costs what changed since the last one (ADR 0036): each object's,
used material's and used node group's part is kept beside the digest it rests on
(``inspect_parts``) and described again only once the digest cache has dropped that
digest; the evaluation comes first, so what it evaluated again is dropped before. Lists,
orders and use counts are made afresh on every call, so the result is always exactly the
full description (``inspect(full=True)``, ``blendmesh/scene.inspect_full``).
"""

from __future__ import annotations

import math
import warnings
from functools import partial
from typing import Any, TypeVar

import bpy
import msgspec

from contracts.inspection import (
    DIGITS,
    InspectedCamera,
    InspectedData,
    InspectedLight,
    InspectedLink,
    InspectedMaterial,
    InspectedModifier,
    InspectedNode,
    InspectedNodeGroup,
    InspectedObject,
    InspectedSocket,
    InterfaceSocket,
    SceneInspection,
)
from services.bridge.inspection import inspect_parts
from services.bridge.inspection.inspect_links import library_of, linked_libraries, overridden
from services.bridge.inspection.inspect_parts import PARTS
from services.bridge.scene import digests
from services.bridge.scene.fingerprint import material_values, modifier_values
from services.bridge.scene.measures import was_evaluated
from services.bridge.scene.scene_state import LIGHT_SIZE_PROPS

# Object types whose evaluated geometry can be read as a mesh; others count 0.
_MESHABLE = frozenset({"MESH", "CURVE", "SURFACE", "FONT", "META"})
# Modifiers Blender skips (its ``is_disabled``) while a pointer they need is empty.
_NEEDS: dict[str, tuple[str, ...]] = {
    "ARMATURE": ("object",),
    "CURVE": ("object",),
    "LATTICE": ("object",),
    "HOOK": ("object",),
    "MESH_DEFORM": ("object",),
    "DATA_TRANSFER": ("object",),
    "PARTICLE_INSTANCE": ("object",),
    "WARP": ("object_from", "object_to"),
    "SHRINKWRAP": ("target",),
    "SURFACE_DEFORM": ("target",),
}
_known: dict[str, bool] = {}
_Counted = TypeVar("_Counted", InspectedMaterial, InspectedNodeGroup)


def r(value: float) -> float:
    """Round canonically; adding 0.0 turns -0.0 into 0.0."""
    return round(float(value), DIGITS) + 0.0


def rvec(values: Any) -> list[float]:
    return [r(v) for v in values]


def _number(value: Any) -> bool:
    # Infinity is a legal default (a Clamp's bound) but not JSON: it reads as no default.
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def plain(value: Any) -> Any:
    """A socket default as JSON data when it is a number, a bool or a vector/colour."""
    if isinstance(value, bool):
        return value
    if _number(value):
        return r(value) if isinstance(value, float) else value
    if isinstance(value, str):
        return None
    try:
        items = list(value)
    except TypeError:
        return None
    return rvec(items) if items and all(_number(v) for v in items) else None


def known(bl_idname: str) -> bool:
    """Whether this Blender registers the node type (a file from a newer one may not)."""
    found = _known.get(bl_idname)
    if found is None:
        found = bpy.types.Node.bl_rna_get_subclass(bl_idname) is not None
        _known[bl_idname] = found
    return found


def _socket(socket: bpy.types.NodeSocket) -> InspectedSocket:
    default = getattr(socket, "default_value", None)
    return InspectedSocket(
        name=socket.name,
        identifier=socket.identifier,
        type=socket.type,
        is_linked=socket.is_linked,
        enabled=socket.enabled,
        default=None if default is None else plain(default),
    )


def _sockets(sockets: Any) -> list[InspectedSocket]:
    # The virtual "extend" socket of group nodes is an editor affordance, not a socket.
    return [_socket(s) for s in sockets if s.bl_idname != "NodeSocketVirtual"]


def _node(node: bpy.types.Node) -> InspectedNode:
    return InspectedNode(
        name=node.name,
        bl_idname=node.bl_idname,
        known=known(node.bl_idname),
        inputs=_sockets(node.inputs),
        outputs=_sockets(node.outputs),
        muted=node.mute,
    )


def _link(link: bpy.types.NodeLink) -> InspectedLink:
    return InspectedLink(
        from_node=link.from_node.name,
        from_socket=link.from_socket.identifier,
        from_type=link.from_socket.type,
        to_node=link.to_node.name,
        to_socket=link.to_socket.identifier,
        to_type=link.to_socket.type,
        valid=link.is_valid,
        muted=link.is_muted,
    )


def _interface(group: bpy.types.NodeTree) -> list[InterfaceSocket]:
    return [
        InterfaceSocket(name=item.name, in_out=item.in_out, socket_type=item.socket_type)
        for item in group.interface.items_tree
        if item.item_type == "SOCKET"
    ]


def _group(group: bpy.types.NodeTree) -> InspectedNodeGroup:
    links = sorted(
        (_link(link) for link in group.links),
        key=lambda k: (k.from_node, k.from_socket, k.to_node, k.to_socket),
    )
    return InspectedNodeGroup(
        name=group.name,
        bl_idname=group.bl_idname,
        interface=_interface(group),
        nodes=[_node(n) for n in sorted(group.nodes, key=lambda n: n.name)],
        links=links,
        users=group.users,
    )


def _nodes_error(mod: bpy.types.NodesModifier) -> str | None:
    group = mod.node_group
    if group is None:
        return "no node group: the modifier is skipped"
    if not any(n.bl_idname == "NodeGroupOutput" for n in group.nodes):
        return f"node group {group.name!r} has no Group Output node"
    outputs = [
        i for i in group.interface.items_tree if i.item_type == "SOCKET" and i.in_out == "OUTPUT"
    ]
    if not outputs or outputs[0].socket_type != "NodeSocketGeometry":
        return f"the first output of node group {group.name!r} is not a geometry"
    # Blender's own log of the last evaluation; sorted, as its order follows threads.
    errors = sorted({w.message for w in mod.node_warnings if w.type == "ERROR"})
    return "; ".join(errors) or None


def _boolean_error(mod: bpy.types.BooleanModifier) -> str | None:
    if mod.operand_type == "OBJECT":
        if mod.object is None:
            return "no operand object: the modifier is skipped"
        if mod.object.type != "MESH":
            return f"operand {mod.object.name!r} is not a mesh: the modifier is skipped"
    elif mod.collection is None and mod.solver != "EXACT":
        return "no operand collection: the modifier is skipped"
    return None


def _modifier_error(mod: bpy.types.Modifier) -> str | None:
    if mod.type == "NODES":
        return _nodes_error(mod)
    if mod.type == "BOOLEAN":
        return _boolean_error(mod)
    missing = [p for p in _NEEDS.get(mod.type, ()) if getattr(mod, p, None) is None]
    return f"no {' and no '.join(missing)}: the modifier is skipped" if missing else None


def _modifier(mod: bpy.types.Modifier) -> InspectedModifier:
    group = getattr(mod, "node_group", None) if mod.type == "NODES" else None
    return InspectedModifier(
        name=mod.name,
        type=mod.type,
        show_viewport=mod.show_viewport,
        node_group=None if group is None else group.name,
        error=_modifier_error(mod),
        properties=modifier_values(mod),
    )


def _counts(ob: bpy.types.Object, evaluated: bpy.types.Object) -> tuple[int, int]:
    if ob.type not in _MESHABLE:
        return 0, 0
    if ob.type == "MESH":
        # An evaluated mesh object's data is the modifier stack's result: no copy needed.
        mesh = evaluated.data
        return len(mesh.vertices), len(mesh.polygons)
    try:
        mesh = evaluated.to_mesh()
    except RuntimeError:
        return 0, 0
    try:
        return (0, 0) if mesh is None else (len(mesh.vertices), len(mesh.polygons))
    finally:
        evaluated.to_mesh_clear()


def _camera(ob: bpy.types.Object) -> InspectedCamera | None:
    if ob.type != "CAMERA":
        return None
    return InspectedCamera(lens=r(ob.data.lens), type=ob.data.type)


def _light(ob: bpy.types.Object) -> InspectedLight | None:
    if ob.type != "LIGHT":
        return None
    light = ob.data
    size = getattr(light, LIGHT_SIZE_PROPS.get(light.type, "shadow_soft_size"))
    return InspectedLight(
        kind=light.type,
        power=r(light.energy),
        color=rvec(light.color),
        size=r(math.degrees(size) if light.type == "SUN" else size),
    )


def _object(ob: bpy.types.Object, depsgraph: bpy.types.Depsgraph) -> InspectedObject:
    evaluated = ob.evaluated_get(depsgraph)
    measured = was_evaluated(ob, evaluated)
    vertices, faces = _counts(ob, evaluated)
    return InspectedObject(
        name=ob.name,
        type=ob.type,
        parent=ob.parent.name if ob.parent else None,
        location=rvec(ob.location),
        rotation_euler=rvec(ob.rotation_euler),
        scale=rvec(ob.scale),
        # Of the evaluated geometry, as the counts: the original's may be a stale fallback.
        # Left empty (not recorded) for an object Blender does not evaluate.
        dimensions=rvec(evaluated.dimensions) if measured else [],
        world_location=rvec(evaluated.matrix_world.translation) if measured else [],
        modifiers=[_modifier(m) for m in ob.modifiers],
        materials=[s.material.name for s in ob.material_slots if s.material is not None],
        data=ob.data.name if ob.data else None,
        hide_viewport=ob.hide_viewport,
        hide_render=ob.hide_render,
        evaluated_vertices=vertices,
        evaluated_faces=faces,
        camera=_camera(ob),
        light=_light(ob),
        library=library_of(ob),
        overridden=overridden(ob),
    )


def _material(mat: bpy.types.Material) -> InspectedMaterial:
    with warnings.catch_warnings():
        # Deprecated in 5.0 (every new material has nodes) and due to go in 6.0.
        warnings.simplefilter("ignore", DeprecationWarning)
        use_nodes = getattr(mat, "use_nodes", mat.node_tree is not None)
    values = material_values(mat)
    return InspectedMaterial(
        name=mat.name,
        use_nodes=bool(use_nodes),
        users=mat.users,
        base_color=values["base_color"],
        metallic=values["metallic"],
        roughness=values["roughness"],
    )


def _datablock(data: Any) -> InspectedData | None:
    """A mesh or curve as saved; counts are lengths of its arrays, cheap at any size."""
    if isinstance(data, bpy.types.Mesh):
        return InspectedData(
            name=data.name,
            type="MESH",
            vertices=len(data.vertices),
            edges=len(data.edges),
            faces=len(data.polygons),
            users=data.users,
        )
    if isinstance(data, bpy.types.Curve):
        points = sum(len(s.bezier_points) + len(s.points) for s in data.splines)
        return InspectedData(
            name=data.name, type="CURVE", vertices=points, faces=len(data.splines), users=data.users
        )
    return None


def _data(objects: Any) -> list[InspectedData]:
    # By pointer: two objects sharing one mesh describe it once.
    found = {ob.data.as_pointer(): _datablock(ob.data) for ob in objects if ob.data is not None}
    return sorted((d for d in found.values() if d is not None), key=lambda d: d.name)


def _users(part: _Counted, users: int) -> _Counted:
    # Who uses a datablock changes with other datablocks (a modifier added elsewhere), so
    # a kept part has the count of now put in.
    return part if part.users == users else msgspec.structs.replace(part, users=users)


def inspect(full: bool = False) -> SceneInspection:
    """Describe the current scene; evaluates its depsgraph first (the active one, so the
    Geometry Nodes log that ``node_warnings`` reads is written).

    Each object's, used material's and used node group's part is kept between calls and
    described again only when the digest cache dropped the entry it rests on
    (``inspect_parts``); ``full`` describes everything afresh and keeps nothing, the
    description the kept parts must always equal (ADR 0036)."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    scene = bpy.context.scene
    # After the evaluation, so its reports (what it evaluated again) drop digests first.
    parts = inspect_parts.fresh_round() if full else PARTS.round(digests.CACHE.current())
    objects = [
        parts.part("object", ob.name, partial(_object, ob, depsgraph))
        for ob in sorted(scene.objects, key=lambda o: o.name)
    ]
    groups = [
        _users(parts.part("node_group", g.name, partial(_group, g)), g.users)
        for g in sorted(bpy.data.node_groups, key=lambda g: g.name)
    ]
    materials = [
        _users(parts.part("material", m.name, partial(_material, m)), m.users)
        for m in sorted(bpy.data.materials, key=lambda m: m.name)
    ]
    parts.done()
    major, minor, patch = bpy.app.version
    return SceneInspection(
        blender_version=f"{major}.{minor}.{patch}",
        objects=objects,
        node_groups=groups,
        materials=materials,
        active_camera=scene.camera.name if scene.camera is not None else None,
        data=_data(scene.objects),
        libraries=linked_libraries(),
    )
