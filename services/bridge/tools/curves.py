"""Curve objects: curve.create (bezier, circle, path), curve.set and curve.to_mesh.

Curves are built from their points with the data API, never ``bpy.ops``: an operator needs
a window and a 3D view the bridge does not have, and would place the curve at a cursor.
What a curve makes once bevelled is only known when Blender evaluates it, so the geometry
budget measures the evaluated scene after each call (``bounded.py``); the bounds below
keep one call within reach of any budget (64 points x 64 steps x a 10-segment bevel).
"""

from __future__ import annotations

import math
from typing import Any

import bpy

from blendmesh_addon.tools.objects import require_free_name, require_object
from services.bridge.scene.canonical import r

from ..registry import Outcome, ToolError, Touches, name_schema, tool
from .answers import BOOLEAN, INTEGER, NUMBER, STRING, answer, deleting
from .placing import LOCATION_LIMIT, link_new, location_schema, require_kind, rotation_schema

MAX_POINTS = 64
KAPPA = 0.5522847498  # handle length of a quarter circle as a cubic bezier, per radius
DEFAULT_POINTS = {
    "bezier": [[-1.0, 0.0, 0.0], [1.0, 0.0, 0.0]],
    "path": [[-2.0, 0.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [2.0, 0.0, 0.0]],
}
POINT = {
    "type": "array",
    "items": {"type": "number", "minimum": -LOCATION_LIMIT, "maximum": LOCATION_LIMIT},
    "minItems": 3,
    "maxItems": 3,
}
SHAPE: dict[str, Any] = {
    "bevel_depth": {
        "type": "number",
        "minimum": 0,
        "maximum": 100,
        "description": "Radius of the round profile swept along the curve (0: a bare line).",
    },
    "bevel_resolution": {
        "type": "integer",
        "minimum": 0,
        "maximum": 10,
        "description": "Segments of the profile's quarter round (Blender's default 4).",
    },
    "extrude": {
        "type": "number",
        "minimum": 0,
        "maximum": 100,
        "description": "Height of the ribbon the curve is extruded into.",
    },
    "resolution": {
        "type": "integer",
        "minimum": 1,
        "maximum": 64,
        "description": "Steps between two points (Blender's default 12).",
    },
}
CURVE_ANSWER = answer(
    {
        "name": STRING,
        "spline": STRING,
        "points": INTEGER,
        "cyclic": BOOLEAN,
        "bevel_depth": NUMBER,
        "bevel_resolution": INTEGER,
        "extrude": NUMBER,
        "resolution": INTEGER,
    }
)


def values(ob: bpy.types.Object) -> dict[str, Any]:
    """What a curve tool answers: its first spline's kind and points and the shape."""
    data = ob.data
    spline = data.splines[0] if len(data.splines) else None
    kind = "nurbs" if spline is not None and spline.type != "BEZIER" else "bezier"
    if spline is None:
        points, cyclic = 0, False
    else:
        held = spline.bezier_points if spline.type == "BEZIER" else spline.points
        points, cyclic = len(held), bool(spline.use_cyclic_u)
    return {
        "name": ob.name,
        "spline": kind,
        "points": points,
        "cyclic": cyclic,
        "bevel_depth": r(data.bevel_depth),
        "bevel_resolution": int(data.bevel_resolution),
        "extrude": r(data.extrude),
        "resolution": int(data.resolution_u),
    }


def _shape(data: bpy.types.Curve, args: dict[str, Any]) -> None:
    for key in ("bevel_depth", "bevel_resolution", "extrude"):
        if key in args:
            setattr(data, key, args[key])
    if "resolution" in args:
        data.resolution_u = args["resolution"]


def _bezier(data: bpy.types.Curve, points: list[list[float]], cyclic: bool) -> None:
    spline = data.splines.new("BEZIER")
    spline.bezier_points.add(len(points) - 1)
    for point, co in zip(spline.bezier_points, points, strict=True):
        point.co = co
        point.handle_left_type = point.handle_right_type = "AUTO"
    spline.use_cyclic_u = cyclic


def _circle(data: bpy.types.Curve, radius: float) -> None:
    spline = data.splines.new("BEZIER")
    spline.bezier_points.add(3)
    for i, point in enumerate(spline.bezier_points):
        angle = i * math.pi / 2
        x, y = math.cos(angle), math.sin(angle)
        tx, ty = -y * KAPPA * radius, x * KAPPA * radius  # along the circle, counterclockwise
        point.co = (x * radius, y * radius, 0.0)
        point.handle_left_type = point.handle_right_type = "ALIGNED"
        point.handle_left = (x * radius - tx, y * radius - ty, 0.0)
        point.handle_right = (x * radius + tx, y * radius + ty, 0.0)
    spline.use_cyclic_u = True


def _path(data: bpy.types.Curve, points: list[list[float]], cyclic: bool) -> None:
    spline = data.splines.new("NURBS")
    spline.points.add(len(points) - 1)
    for point, co in zip(spline.points, points, strict=True):
        point.co = (*co, 1.0)
    spline.order_u = min(4, len(points))
    spline.use_endpoint_u = not cyclic
    spline.use_cyclic_u = cyclic


@tool(
    name="curve.create",
    touches=Touches(("name",)),
    description=(
        "Add a curve object: a bezier through the given points (smooth handles), a circle "
        "of the given radius, or a path (a NURBS through the points, what follow-path "
        f"constraints follow). 2 to {MAX_POINTS} points. bevel_depth sweeps a round "
        "profile along it; the result is held to the geometry budget. An existing name is "
        "a conflict."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["kind"],
        "properties": {
            "kind": {"enum": ["bezier", "circle", "path"]},
            "name": name_schema("Object name (default BezierCurve, BezierCircle or NurbsPath)."),
            "points": {
                "type": "array",
                "items": POINT,
                "minItems": 2,
                "maxItems": MAX_POINTS,
                "description": "Points in the object's space (bezier and path only).",
            },
            "radius": {
                "type": "number",
                "minimum": 0.0001,
                "maximum": 1e5,
                "description": "Circle radius (circle only, default 1).",
            },
            "cyclic": {"type": "boolean", "description": "Close the curve (bezier and path)."},
            "location": location_schema("Location in scene units (default 0,0,0)."),
            "rotation": rotation_schema("Default 0,0,0."),
            **SHAPE,
        },
    },
    output_schema=CURVE_ANSWER,
    safety_level="safe_write",
    idempotence_class="non_idempotent",
    compensation="object.delete",
)
def create(args: dict[str, Any]) -> Outcome:
    """Check the name and which arguments fit the kind, then build the spline."""
    kind = args["kind"]
    default = {"bezier": "BezierCurve", "circle": "BezierCircle", "path": "NurbsPath"}[kind]
    name = args.get("name", default)
    misplaced: list[str] = [k for k in ("points", "cyclic") if k in args and kind == "circle"]
    misplaced += ["radius"] if "radius" in args and kind != "circle" else []
    if misplaced:
        raise ToolError(
            "invalid_input",
            f"a {kind} takes no {', '.join(misplaced)}: a circle takes a radius, a bezier or "
            "a path its points",
        )
    require_free_name(name)
    data = bpy.data.curves.new(name, "CURVE")
    data.dimensions = "3D"
    data.use_path = True  # what follow-path reads; harmless on any other curve
    if kind == "circle":
        _circle(data, args.get("radius", 1.0))
    elif kind == "bezier":
        _bezier(data, args.get("points", DEFAULT_POINTS["bezier"]), args.get("cyclic", False))
    else:
        _path(data, args.get("points", DEFAULT_POINTS["path"]), args.get("cyclic", False))
    _shape(data, args)
    ob = link_new(name, data, args)
    return Outcome(
        data=values(ob),
        mutated=True,
        message=f"created {kind} curve {ob.name!r}",
        compensation=deleting(ob.name),
    )


@tool(
    name="curve.set",
    touches=Touches(("name",)),
    description=(
        "Change a curve's bevel depth and resolution, extrude and resolution (text objects "
        "use text.set). The result is held to the geometry budget."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["name"],
        "minProperties": 2,
        "properties": {"name": name_schema("Curve object name."), **SHAPE},
    },
    output_schema=CURVE_ANSWER,
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="checkpoint",
)
def set_curve(args: dict[str, Any]) -> Outcome:
    """Check the object is a curve, then set."""
    ob = require_kind(args["name"], "CURVE", "curve.set")
    _shape(ob.data, args)
    return Outcome(data=values(ob), mutated=True, message=f"set curve {ob.name!r}")


@tool(
    name="curve.to_mesh",
    touches=Touches(("name",)),
    description=(
        "Turn a curve or text object into a mesh object of the same name, as Blender "
        "evaluates it (bevel and extrude included); it keeps its transform, parent, "
        "collections and materials, and loses its modifiers and constraints. Destructive: "
        "undone from the checkpoint."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["name"],
        "properties": {"name": name_schema("Curve or text object name.")},
    },
    output_schema=answer({"name": STRING, "vertices": INTEGER, "faces": INTEGER}),
    safety_level="destructive",
    idempotence_class="non_idempotent",
    compensation="checkpoint",
)
def to_mesh(args: dict[str, Any]) -> Outcome:
    """Copy the evaluated geometry into a new mesh object that takes the curve's place."""
    ob = require_object(args["name"])
    if ob.type not in ("CURVE", "FONT"):
        raise ToolError(
            "invalid_input",
            f"curve.to_mesh needs a curve or text object, but {ob.name!r} is a {ob.type}",
        )
    name = ob.name
    evaluated = ob.evaluated_get(bpy.context.evaluated_depsgraph_get())
    mesh = bpy.data.meshes.new_from_object(evaluated)
    for material in ob.data.materials:
        if material is not None and material.name not in mesh.materials:
            mesh.materials.append(material)
    curve = ob.data
    made = bpy.data.objects.new(f"{name}.mesh", mesh)
    made.matrix_world = ob.matrix_world.copy()
    collections = list(ob.users_collection)
    parent = ob.parent
    children = [(child, child.matrix_world.copy()) for child in ob.children]
    bpy.data.objects.remove(ob, do_unlink=True)
    if curve.users == 0:
        bpy.data.curves.remove(curve)
    made.name = mesh.name = name
    for collection in collections:
        collection.objects.link(made)
    if parent is not None:
        made.parent = parent
        made.matrix_parent_inverse = parent.matrix_world.inverted()
    for child, matrix in children:
        child.parent = made
        child.matrix_world = matrix
    return Outcome(
        data={"name": made.name, "vertices": len(mesh.vertices), "faces": len(mesh.polygons)},
        mutated=True,
        message=f"turned {name!r} into a mesh of {len(mesh.vertices)} vertices",
    )
