"""Mesh builders using bmesh only.

``bpy.ops.mesh.primitive_*`` needs a UI context and re-evaluates the depsgraph
on every call; bmesh builds the same geometry directly into mesh data, which
is fast and works headless. Sizes match Blender's Add-menu defaults.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import bmesh
import bpy

from .defaults import DEFAULT_SIZES


def _cube(bm: bmesh.types.BMesh) -> None:
    bmesh.ops.create_cube(bm, size=2.0, calc_uvs=True)


def _uv_sphere(bm: bmesh.types.BMesh) -> None:
    bmesh.ops.create_uvsphere(bm, u_segments=32, v_segments=16, radius=1.0, calc_uvs=True)


def _ico_sphere(bm: bmesh.types.BMesh) -> None:
    bmesh.ops.create_icosphere(bm, subdivisions=2, radius=1.0, calc_uvs=True)


def _cylinder(bm: bmesh.types.BMesh) -> None:
    bmesh.ops.create_cone(
        bm,
        cap_ends=True,
        cap_tris=False,
        segments=32,
        radius1=1.0,
        radius2=1.0,
        depth=2.0,
        calc_uvs=True,
    )


def _cone(bm: bmesh.types.BMesh) -> None:
    bmesh.ops.create_cone(
        bm,
        cap_ends=True,
        cap_tris=False,
        segments=32,
        radius1=1.0,
        radius2=0.0,
        depth=2.0,
        calc_uvs=True,
    )


def _plane(bm: bmesh.types.BMesh) -> None:
    # create_grid's size is the half-width, so 1.0 gives the default 2x2 plane.
    bmesh.ops.create_grid(bm, x_segments=1, y_segments=1, size=1.0, calc_uvs=True)


def _torus(
    bm: bmesh.types.BMesh,
    major: float = 1.0,
    minor: float = 0.25,
    major_segments: int = 48,
    minor_segments: int = 12,
) -> None:
    # bmesh has no torus operator, so build the quad grid by hand.
    verts = []
    for i in range(major_segments):
        theta = 2.0 * math.pi * i / major_segments
        for j in range(minor_segments):
            phi = 2.0 * math.pi * j / minor_segments
            ring = major + minor * math.cos(phi)
            verts.append(
                bm.verts.new(
                    (ring * math.cos(theta), ring * math.sin(theta), minor * math.sin(phi))
                )
            )
    uv_layer = bm.loops.layers.uv.verify()
    for i in range(major_segments):
        i2 = (i + 1) % major_segments
        for j in range(minor_segments):
            j2 = (j + 1) % minor_segments
            quad = (
                verts[i * minor_segments + j],
                verts[i2 * minor_segments + j],
                verts[i2 * minor_segments + j2],
                verts[i * minor_segments + j2],
            )
            face = bm.faces.new(quad)
            # UVs unwrap the torus onto the unit square (seams at i=0 and j=0).
            uvs = ((i, j), (i + 1, j), (i + 1, j + 1), (i, j + 1))
            for loop, (u, v) in zip(face.loops, uvs, strict=True):
                loop[uv_layer].uv = (u / major_segments, v / minor_segments)
    bm.normal_update()


def _monkey(bm: bmesh.types.BMesh) -> None:
    bmesh.ops.create_monkey(bm, calc_uvs=True)


BUILDERS: dict[str, Callable[[bmesh.types.BMesh], None]] = {
    "cube": _cube,
    "uv_sphere": _uv_sphere,
    "ico_sphere": _ico_sphere,
    "cylinder": _cylinder,
    "cone": _cone,
    "plane": _plane,
    "torus": _torus,
    "monkey": _monkey,
}


def check_dimensions(primitive: str, dimensions: list[float]) -> None:
    """Refuse a size of 0 or less on an axis the primitive has, or one on an axis it is flat
    along (a plane's z must be 0), before anything is made."""
    if len(dimensions) != 3:
        raise ValueError(f"give three sizes (x, y, z), not {len(dimensions)}")
    for axis, (built, wanted) in enumerate(zip(DEFAULT_SIZES[primitive], dimensions, strict=True)):
        if built == 0 and wanted != 0:
            raise ValueError(f"a {primitive} is flat along {'xyz'[axis]}: give 0 there")
        if built != 0 and wanted <= 0:
            raise ValueError(f"the {'xyz'[axis]} size of a {primitive} must be above 0")


def _resize(bm: bmesh.types.BMesh, dimensions: list[float]) -> None:
    """Multiply the vertices so the mesh measures ``dimensions`` (measured, not assumed)."""
    factors = []
    for axis, wanted in enumerate(dimensions):
        values = [v.co[axis] for v in bm.verts]
        built = max(values) - min(values)
        factors.append(wanted / built if built > 1e-9 else 1.0)
    # bmesh.ops.scale has this signature from Blender 2.8 to 5.x (the add-on's 3.4 too).
    bmesh.ops.scale(bm, vec=factors, verts=bm.verts)


def build_mesh(primitive: str, name: str, dimensions: list[float] | None = None) -> bpy.types.Mesh:
    """Create a new mesh datablock holding the given primitive, at ``dimensions`` (its size
    along x, y, z in scene units at scale 1) when given, else at Blender's default size.
    The size goes into the vertices, not the object's scale: a bevel's width, an array's
    gap or a solidify's thickness then measure what they say."""
    if dimensions is not None:
        check_dimensions(primitive, dimensions)
    mesh = bpy.data.meshes.new(name)
    bm = bmesh.new()
    try:
        # calc_uvs needs a UV layer to write into.
        bm.loops.layers.uv.new("UVMap")
        BUILDERS[primitive](bm)
        if dimensions is not None:
            _resize(bm, dimensions)
        bm.to_mesh(mesh)
    finally:
        bm.free()
    mesh.update()
    return mesh
