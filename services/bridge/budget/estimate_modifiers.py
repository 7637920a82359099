"""One rule a generating modifier type: how it changes a mesh's counts, from its RNA.

A rule takes the counts so far (``Shape``), a reader of the modifier's properties (the
value a call is about to set, else the modifier's own) and the object; it updates the
counts in place and returns what multiplied them, naming the property, or None. The
formulas follow Blender's (the ARRAY's fit count is ``MOD_array.cc``'s); where Blender's
result depends on more than RNA says (merging, angle limits) they give the upper bound.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import bpy
from mathutils import Matrix, Vector

if TYPE_CHECKING:
    from services.bridge.budget.estimate import Estimate

Prop = Callable[[str], Any]
EPSILON = 1e-6  # Blender's: an ARRAY offset shorter than this makes one copy
# Types that move or drop geometry but never add any; a stack of these keeps its counts.
KEEP = frozenset({
    "ARMATURE", "CAST", "CURVE", "DISPLACE", "HOOK", "LAPLACIANDEFORM", "LATTICE",
    "MESH_DEFORM", "SHRINKWRAP", "SIMPLE_DEFORM", "SMOOTH", "CORRECTIVE_SMOOTH",
    "LAPLACIANSMOOTH", "SURFACE_DEFORM", "WARP", "WAVE", "VOLUME_DISPLACE", "DATA_TRANSFER",
    "MESH_CACHE", "NORMAL_EDIT", "WEIGHTED_NORMAL", "UV_PROJECT", "UV_WARP",
    "VERTEX_WEIGHT_EDIT", "VERTEX_WEIGHT_MIX", "VERTEX_WEIGHT_PROXIMITY", "DECIMATE", "WELD",
    "MASK", "BUILD", "PARTICLE_SYSTEM", "CLOTH", "COLLISION", "SOFT_BODY", "DYNAMIC_PAINT",
    "SURFACE",
})  # fmt: skip


@dataclass
class Shape:
    """A mesh's counts as the stack goes: vertices, edges, faces, face corners, and the
    copies ARRAYs made. Its bounds are read from the mesh only when a rule needs them."""

    vertices: int
    edges: int
    faces: int
    loops: int
    copies: int = 1
    source: Callable[[], tuple[list[float], list[float]]] | None = field(default=None)
    _bounds: tuple[list[float], list[float]] | None = field(default=None, init=False)

    def bounds(self) -> tuple[list[float], list[float]]:
        if self._bounds is None:
            self._bounds = self.source() if self.source else ([0.0] * 3, [0.0] * 3)
        return self._bounds

    def reshape(self, low: list[float], high: list[float]) -> None:
        self._bounds = (low, high)

    def size(self) -> list[float]:
        low, high = self.bounds()
        return [h - lo for lo, h in zip(low, high, strict=True)]

    def times(self, factor: int) -> None:
        self.vertices *= factor
        self.edges *= factor
        self.faces *= factor
        self.loops *= factor


@dataclass(frozen=True)
class Context:
    """The object whose stack is walked, the estimate of any other object, and ``note``,
    which records another datablock the estimate reads (so a change to it drops it)."""

    ob: bpy.types.Object
    of: Callable[[bpy.types.Object], Estimate]
    note: Callable[..., None]


def world(ob: bpy.types.Object) -> Matrix:
    """The object's world matrix from its transform as it is now: ``matrix_world`` is only
    brought up to date when the depsgraph is evaluated, which is what this avoids."""
    matrix = ob.matrix_basis.copy()
    while ob.parent is not None:
        matrix = ob.parent.matrix_basis @ ob.matrix_parent_inverse @ matrix
        ob = ob.parent
    return matrix


def curve_length(curve: bpy.types.Object | None) -> float:
    """At least the length of the curve's path: the control polygon's, handles included,
    is never shorter; scaled by the largest stretch of the curve's world matrix."""
    if curve is None or curve.type != "CURVE":
        return 0.0
    length = 0.0
    for spline in curve.data.splines:
        if spline.type == "BEZIER":
            knots = list(spline.bezier_points)
            ring = knots + knots[:1] if spline.use_cyclic_u else knots
            for a, b in itertools.pairwise(ring):
                length += (a.handle_right - a.co).length + (b.handle_left - a.handle_right).length
                length += (b.co - b.handle_left).length
        else:
            points = [p.co.xyz for p in spline.points]
            ring = points + points[:1] if spline.use_cyclic_u else points
            length += sum((b - a).length for a, b in itertools.pairwise(ring))
    stretch = sum(v * v for row in world(curve).to_3x3() for v in row) ** 0.5
    return length * stretch


def _array(shape: Shape, p: Prop, ctx: Context) -> str | None:
    offset = Vector((0.0, 0.0, 0.0))
    if p("use_relative_offset"):
        relative = p("relative_offset_displace")
        offset += Vector([relative[i] * s for i, s in enumerate(shape.size())])
    if p("use_constant_offset"):
        offset += Vector(p("constant_offset_displace"))
    target = p("offset_object")
    if p("use_object_offset") and target is not None:
        ctx.note(target)
        offset += (world(ctx.ob).inverted_safe() @ world(target)).translation
    fit = p("fit_type")
    if fit == "FIXED_COUNT":
        count = max(1, int(p("count")))
        why = f"count {count:,}"
    else:
        if fit == "FIT_LENGTH":
            length = float(p("fit_length"))
            over = f"fit_length {length:g}"
        else:
            curve = p("curve")
            ctx.note(curve)
            length = curve_length(curve)
            over = f"curve {getattr(curve, 'name', None)!r} (up to {length:g} long)"
        step = offset.length
        count = int((length + EPSILON) / step + 1) if step > EPSILON else 1
        why = f"fit_type {fit}: {over} over an offset of {step:.6g}"
    caps = [p("start_cap"), p("end_cap")]
    low, high = shape.bounds()
    reach = [(count - 1) * v for v in offset]
    shape.reshape(
        [lo + min(0.0, r) for lo, r in zip(low, reach, strict=True)],
        [h + max(0.0, r) for h, r in zip(high, reach, strict=True)],
    )
    shape.times(count)
    shape.copies *= count
    shape.vertices += sum(ctx.of(c).vertices for c in caps if c is not None)
    if count == 1:
        return None
    return why if fit == "FIXED_COUNT" else f"{why} ({count:,} copies)"


def _subdivision(shape: Shape, p: Prop, ctx: Context) -> str | None:
    levels = {
        "levels": p("levels") if p("show_viewport") else 0,
        "render_levels": p("render_levels") if p("show_render") else 0,
    }
    name = max(levels, key=lambda k: levels[k])
    for _ in range(levels[name]):
        # Catmull-Clark: a vertex per vertex, edge and face; every corner becomes a quad.
        shape.vertices, shape.edges, shape.faces, shape.loops = (
            shape.vertices + shape.edges + shape.faces,
            2 * shape.edges + shape.loops,
            shape.loops,
            4 * shape.loops,
        )
    return f"{name} {levels[name]} (faces x{4 ** levels[name]:,})" if levels[name] else None


def _mirror(shape: Shape, p: Prop, ctx: Context) -> str | None:
    axes = [i for i, on in enumerate(p("use_axis")) if on]
    if not axes:
        return None
    low, high = shape.bounds()
    low, high = list(low), list(high)
    for i in axes:  # about the object's origin: the result is symmetric on each axis
        reach = max(abs(low[i]), abs(high[i]))
        low[i], high[i] = -reach, reach
    shape.reshape(low, high)
    shape.times(2 ** len(axes))
    return f"use_axis on {len(axes)} axes (x{2 ** len(axes)})"


def _solidify(shape: Shape, p: Prop, ctx: Context) -> str | None:
    v, e, f, corners = shape.vertices, shape.edges, shape.faces, shape.loops
    shape.vertices, shape.edges, shape.faces, shape.loops = (
        2 * v,
        2 * e + v,
        2 * f + e,
        2 * corners + 4 * e,
    )
    return "(doubles the geometry)"


def _wireframe(shape: Shape, p: Prop, ctx: Context) -> str | None:
    v, e, corners = shape.vertices, shape.edges, shape.loops
    shape.vertices, shape.edges = 2 * (v + corners), 4 * corners + 2 * e
    shape.faces = 2 * corners + 4 * e
    shape.loops = 4 * shape.faces
    return f"(a frame around each of {e:,} edges)"


def _bevel(shape: Shape, p: Prop, ctx: Context) -> str | None:
    s = int(p("segments"))
    v, e = shape.vertices, shape.edges
    # Each beveled edge a strip of segments, each vertex a patch of up to (s + 1)^2.
    shape.vertices = v * (s + 1) ** 2 + 2 * e * s
    shape.edges = e * (2 * s + 1) + v * s
    shape.faces += e * s + v * s
    shape.loops += 4 * (e * s + v * s)
    return f"segments {s}" if s > 1 else None


def _screw(shape: Shape, p: Prop, ctx: Context) -> str | None:
    steps = {
        "steps": p("steps") if p("show_viewport") else 0,
        "render_steps": p("render_steps") if p("show_render") else 0,
    }
    name = max(steps, key=lambda k: steps[k])
    n = steps[name] * max(1, int(p("iterations")))
    v, e, f, corners = shape.vertices, shape.edges, shape.faces, shape.loops
    shape.vertices, shape.edges = v * (n + 1), e * (n + 1) + v * n
    shape.faces, shape.loops = 2 * f + e * n, 2 * corners + 4 * e * n
    return f"{name} {steps[name]} x iterations {p('iterations')}"


def _remesh(shape: Shape, p: Prop, ctx: Context) -> str | None:
    if p("mode") == "VOXEL":
        voxel = float(p("voxel_size"))
        # Cells across each side, and one more each way for the surface's own voxels.
        x, y, z = [s / voxel + 2 if voxel > 0 else math.inf for s in shape.size()]
        surface = 2 * (x * y + y * z + z * x)
        why = f"voxel_size {voxel:g} over bounds of {max(shape.size()):g}"
    else:
        depth = int(p("octree_depth"))
        surface = 6 * 4.0**depth
        why = f"octree_depth {depth}"
    made = int(min(surface, 1e30))
    shape.vertices, shape.edges, shape.faces, shape.loops = made, 2 * made, made, 4 * made
    return why


def _triangulate(shape: Shape, p: Prop, ctx: Context) -> str | None:
    triangles = max(shape.faces, shape.loops - 2 * shape.faces)
    shape.edges += max(0, shape.loops - 3 * shape.faces)
    shape.faces, shape.loops = triangles, 3 * triangles
    return None


def _split(shape: Shape, p: Prop, ctx: Context) -> str | None:
    shape.vertices = max(shape.vertices, shape.loops)  # at most a vertex per face corner
    return None


def _boolean(shape: Shape, p: Prop, ctx: Context) -> str | None:
    operands: list[bpy.types.Object] = []
    if p("operand_type") == "OBJECT" and p("object") is not None:
        operands = [p("object")]
    elif p("operand_type") == "COLLECTION" and p("collection") is not None:
        ctx.note(p("collection"))
        operands = list(p("collection").all_objects)
    added = sum(ctx.of(o).vertices for o in operands)
    # The result holds at most both meshes and their cuts; a closed mesh has about two
    # edges, one face and four corners a vertex.
    shape.vertices += 2 * added
    shape.edges += 4 * added
    shape.faces += 2 * added
    shape.loops += 8 * added
    return None


Rule = Callable[[Shape, Prop, Context], "str | None"]
RULES: dict[str, Rule] = {
    "ARRAY": _array,
    "SUBSURF": _subdivision,
    "MULTIRES": _subdivision,
    "MIRROR": _mirror,
    "SOLIDIFY": _solidify,
    "WIREFRAME": _wireframe,
    "BEVEL": _bevel,
    "SCREW": _screw,
    "REMESH": _remesh,
    "TRIANGULATE": _triangulate,
    "EDGE_SPLIT": _split,
    "EXPLODE": _split,
    "BOOLEAN": _boolean,
}
