"""What an object would make once Blender evaluates it, read from RNA alone.

Nothing here evaluates the depsgraph: the point is to know the size of the result before
Blender makes it, so a stack that would make a billion copies costs microseconds to
refuse. The counts walk the modifier stack as Blender will (``estimate_modifiers`` holds
one rule per generating type), then add what the object instances: a collection, its
children on its vertices or faces, particles.

Counts are upper bounds where Blender's may be lower (merged vertices, a bevel limited by
angle). Modifiers that change the shape without adding geometry (deformers, smoothing,
booleans) are taken to keep the object's bounds, which only a fit-length or fit-curve
ARRAY after them reads. What RNA cannot tell (a Geometry Nodes tree, a generator with no
rule here, a curve or text object) is flagged ``measure``: ``bounded`` measures it on the
evaluated scene once everything RNA can tell is within the budget.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import bpy

from services.bridge.budget import estimate_modifiers as rules
from services.bridge.budget.estimate_modifiers import Shape
from services.bridge.scene import fingerprint

# (object name, modifier name) -> property -> the value a call is about to set.
Overrides = Mapping[tuple[str, str], Mapping[str, Any]]
# Object types with geometry RNA cannot count: measured on the evaluated scene.
MEASURED_TYPES = frozenset(
    {"CURVE", "SURFACE", "META", "FONT", "CURVES", "POINTCLOUD", "VOLUME", "GREASEPENCIL"}
)


@dataclass
class Estimate:
    """What one object would make: its vertices (instanced ones included), its copies and
    instances (1: itself), and what multiplied them, in the order Blender applies it.
    ``instanced``: the (copies, vertices) of that which the object instances as a whole
    (a collection, children, particles), which its evaluated geometry does not hold."""

    vertices: int
    copies: int
    causes: list[str] = field(default_factory=list)
    measure: bool = False
    instanced: tuple[int, int] = (0, 0)
    measured: bool = False  # the counts are the evaluated geometry's


class Estimator:
    """Estimates of the scene's objects, each computed once, with the names each one read
    (``refs``: a change to any of them may change it). ``overrides`` are property values
    a call is about to set, read in place of the modifier's own."""

    def __init__(self, overrides: Overrides | None = None) -> None:
        self.overrides = overrides or {}
        self.done: dict[str, Estimate] = {}
        self.refs: dict[str, frozenset[str]] = {}
        self._open: set[str] = set()
        self._reading: list[set[str]] = []

    def of(self, ob: bpy.types.Object) -> Estimate:
        """The estimate of ``ob``; an object reached again through itself counts nothing
        (a boolean or instance cycle, which Blender breaks as well)."""
        found = self.done.get(ob.name)
        if found is None and ob.name in self._open:
            self.note(ob)
            return Estimate(0, 1)
        if found is None:
            self._open.add(ob.name)
            self._reading.append(set())
            try:
                self.note(ob)
                found = self._estimate(ob)
            finally:
                self._open.discard(ob.name)
                self.refs[ob.name] = frozenset(self._reading.pop())
            self.done[ob.name] = found
        if self._reading:
            self._reading[-1] |= self.refs[ob.name]
        return found

    def note(self, *ids: bpy.types.ID | None) -> None:
        """Record that the estimate being made read these (an object brings its data and
        its parents: its world matrix reads them)."""
        if not self._reading:
            return
        reading = self._reading[-1]
        for found in ids:
            while found is not None:
                reading.add(found.name)
                data = getattr(found, "data", None)
                if isinstance(data, bpy.types.ID):
                    reading.add(data.name)
                found = getattr(found, "parent", None)

    def _note_groups(self, group: bpy.types.NodeTree | None) -> None:
        """A Geometry Nodes group and the groups nested in it, which its result reads."""
        stack = [group] if group is not None else []
        seen: set[str] = set()
        while stack:
            found = stack.pop()
            if found.name not in seen:
                seen.add(found.name)
                self.note(found)
                stack.extend(n.node_tree for n in found.nodes if getattr(n, "node_tree", None))

    def prop(self, ob: bpy.types.Object, mod: bpy.types.Modifier) -> Callable[[str], Any]:
        over = self.overrides.get((ob.name, mod.name), {})
        return lambda ident: over[ident] if ident in over else getattr(mod, ident)

    def _estimate(self, ob: bpy.types.Object) -> Estimate:
        shape = _base(ob)
        measure = ob.type in MEASURED_TYPES
        causes: list[str] = []
        context = rules.Context(ob, self.of, self.note)
        for mod in ob.modifiers:
            p = self.prop(ob, mod)
            if not (p("show_viewport") or p("show_render")):
                continue
            if mod.type == "NODES":
                measure = measure or p("node_group") is not None
                self._note_groups(p("node_group"))
                continue
            rule = rules.RULES.get(mod.type)
            if rule is None:
                measure = measure or mod.type not in rules.KEEP
                continue
            cause = rule(shape, p, context)
            if cause:
                causes.append(f"modifier {mod.name!r} ({mod.type}) {cause}")
        copies, vertices = self._instances(ob, shape, causes)
        return Estimate(
            shape.vertices + vertices, shape.copies + copies, causes, measure, (copies, vertices)
        )

    def _instances(self, ob: bpy.types.Object, shape: Shape, causes: list[str]) -> tuple[int, int]:
        """Instances ``ob`` makes, and their vertices; each named in ``causes``."""
        copies = vertices = 0
        if ob.instance_type == "COLLECTION" and ob.instance_collection is not None:
            self.note(ob.instance_collection)
            members = [self.of(o) for o in ob.instance_collection.all_objects]
            copies += sum(m.copies for m in members)
            vertices += sum(m.vertices for m in members)
            name = ob.instance_collection.name
            causes.append(f"instance_collection {name!r} ({len(members):,} objects)")
        elif ob.instance_type in ("VERTS", "FACES") and ob.children:
            points = shape.vertices if ob.instance_type == "VERTS" else shape.faces
            children = [self.of(c) for c in ob.children]
            copies += points * sum(c.copies for c in children)
            vertices += points * sum(c.vertices for c in children)
            causes.append(
                f"instance_type {ob.instance_type} ({points:,} places x {len(children)} children)"
            )
        for system in getattr(ob, "particle_systems", ()):
            made, drawn = self._particles(system.settings)
            copies += made
            vertices += drawn
            causes.append(f"particle system {system.name!r} ({made:,} instances)")
        return copies, vertices

    def _particles(self, settings: bpy.types.ParticleSettings) -> tuple[int, int]:
        """(instances, vertices) of one particle system: hair strands are vertices, particles
        drawn as an object or a collection are instances of it."""
        self.note(settings)
        count = int(settings.count)
        if settings.child_type != "NONE":
            count *= 1 + max(int(settings.child_percent), int(settings.rendered_child_count))
        if settings.type == "HAIR":
            steps = 2 ** max(int(settings.display_step), int(settings.render_step))
            return 0, count * (steps + 1)
        drawn: list[Estimate] = []
        if settings.render_type == "OBJECT" and settings.instance_object is not None:
            drawn = [self.of(settings.instance_object)]
        elif settings.render_type == "COLLECTION" and settings.instance_collection is not None:
            self.note(settings.instance_collection)
            drawn = [self.of(o) for o in settings.instance_collection.all_objects]
        if not drawn:
            return 0, count  # points
        return (
            count * max(d.copies for d in drawn),
            count * max(d.vertices for d in drawn),
        )


def _base(ob: bpy.types.Object) -> Shape:
    """The counts of the object's own mesh; nothing for other types."""
    if ob.type != "MESH" or ob.data is None:
        return Shape(0, 0, 0, 0)
    mesh = ob.data
    return Shape(
        len(mesh.vertices),
        len(mesh.edges),
        len(mesh.polygons),
        len(mesh.loops),
        source=lambda: _mesh_bounds(mesh),
    )


def _mesh_bounds(mesh: bpy.types.Mesh) -> tuple[list[float], list[float]]:
    if not mesh.vertices:
        return [0.0] * 3, [0.0] * 3
    points = fingerprint.positions(mesh).reshape(-1, 3)
    return points.min(axis=0).tolist(), points.max(axis=0).tolist()
