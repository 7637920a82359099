"""Two reads a door asks as runs: one object in depth, and a picture from a chosen view.

``object.inspect`` is a bridge tool and ``scene.render_view`` the executor's own, both
``read_only``: a door submits a one-operation plan, so policy decides it, the log and the
audit record it, and the run leaves no revision. The inspected object comes back in the
operation's receipt (``ObjectDetail``); the picture is too large for an event, so the
executor stages the PNG like an upload, for the run's user, and the receipt names it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

INSPECT_TOOL = "object.inspect"
VIEW_TOOL = "scene.render_view"
MIN_SIDE, MAX_SIDE = 64, 2048  # a view's width and height, in pixels
DEFAULT_AZIMUTH, DEFAULT_ELEVATION = 45.0, 30.0  # front right, looking down: the preview's
MAX_PROPERTIES = 64  # custom properties an inspection lists; it counts the rest
MAX_PROPERTY_CHARS = 256  # a custom property's value is cut to this many characters

Side = Annotated[int, msgspec.Meta(ge=MIN_SIDE, le=MAX_SIDE)]
# How a view is shaded. ``material``: Workbench showing each material's colour and image
# textures (what a model that just set a material needs to see, at Workbench's speed);
# ``solid``: Workbench's flat viewport colours; ``rendered``: Cycles on the CPU with a few
# samples, lit as the scene is. EEVEE is not offered: headless it has only a software GL
# context here, where one 256 px frame took 32 s against Cycles' 2 s.
Shading = Literal["material", "solid", "rendered"]
SHADINGS: tuple[Shading, ...] = ("material", "solid", "rendered")
DEFAULT_SHADING: Shading = "material"
MAX_RENDERED_SIDE = 1024  # Cycles on two cores: ~8 s at 512 px, four times that at 1024


class _Struct(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


class ViewParams(_Struct, frozen=True, kw_only=True):
    """``blendmesh/scene.render_view``: a PNG of the scene at ``path``, through the named
    ``camera``, or from a temporary camera at ``azimuth`` / ``elevation`` degrees (0 looks
    from -Y towards +Y, 90 from +X; elevation 90 looks straight down) framing the scene."""

    path: Annotated[str, msgspec.Meta(min_length=1)]
    width: Side = 512
    height: Side = 512
    azimuth: Annotated[float, msgspec.Meta(ge=-360, le=360)] = DEFAULT_AZIMUTH
    elevation: Annotated[float, msgspec.Meta(ge=-90, le=90)] = DEFAULT_ELEVATION
    camera: Annotated[str, msgspec.Meta(min_length=1, max_length=63)] | None = None
    shading: Shading = DEFAULT_SHADING


class AssetParams(_Struct, frozen=True, kw_only=True):
    """``blendmesh/scene.import_asset``: import the file at ``path`` as ``format`` into
    the collection ``collection`` (made when missing)."""

    path: Annotated[str, msgspec.Meta(min_length=1)]
    format: Literal["gltf", "glb", "fbx", "obj", "usda", "stl"]
    collection: Annotated[str, msgspec.Meta(min_length=1, max_length=63)]


class AssetImported(_Struct, frozen=True, kw_only=True):
    """What an import added: its objects (by name, sorted) and their collection."""

    collection: str
    objects: list[str] = []


# -- one object in depth ------------------------------------------------------------------


class MeshStats(_Struct, frozen=True, kw_only=True):
    """Counts of the object's mesh before modifiers and after them (evaluated)."""

    vertices: int
    edges: int
    faces: int
    triangles: int
    evaluated_vertices: int = 0
    evaluated_edges: int = 0
    evaluated_faces: int = 0
    evaluated_triangles: int = 0


class ModifierDetail(_Struct, frozen=True, kw_only=True):
    """A modifier in stack order with the settings that shape its result."""

    name: str
    type: str
    show_viewport: bool = True
    show_render: bool = True
    settings: dict[str, Any] = {}  # plain values only: numbers, booleans, names


class MaterialSlot(_Struct, frozen=True, kw_only=True):
    name: str | None  # None for an empty slot
    link: str = "DATA"  # OBJECT or DATA: where the slot's material is stored
    base_color: list[float] = []


class ObjectDetail(_Struct, frozen=True, kw_only=True):
    """One object as ``object.inspect`` describes it; floats rounded like the artifact."""

    name: str
    type: str
    data: str | None = None
    location: list[float] = []
    rotation_euler: list[float] = []  # radians
    scale: list[float] = []
    dimensions: list[float] = []
    world_bounds: list[list[float]] = []  # [min xyz, max xyz] of the evaluated geometry
    parent: str | None = None
    children: list[str] = []
    collections: list[str] = []
    hide_viewport: bool = False
    hide_render: bool = False
    mesh: MeshStats | None = None  # for objects with geometry to count
    modifiers: list[ModifierDetail] = []
    materials: list[MaterialSlot] = []
    custom_properties: dict[str, Any] = {}
    more_custom_properties: int = 0  # beyond MAX_PROPERTIES, not listed


def _plan(request_id: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "request_id": request_id,
        "operations": [
            {
                "operation_id": tool.replace(".", "_"),
                "tool_name": tool,
                "args": args,
                "depends_on": [],
                "safety_level": "read_only",
            }
        ],
    }


def inspect_plan(request_id: str, name: str) -> dict[str, Any]:
    """The plan that describes the object ``name`` in depth."""
    return _plan(request_id, INSPECT_TOOL, {"name": name})


def view_plan(
    request_id: str,
    width: int,
    height: int,
    azimuth: float | None = None,
    elevation: float | None = None,
    camera: str | None = None,
    shading: Shading = DEFAULT_SHADING,
) -> dict[str, Any]:
    """The plan that renders one view: through ``camera``, or from an angle."""
    args: dict[str, Any] = {"width": width, "height": height, "shading": shading}
    if camera is not None:
        args["camera"] = camera
    if azimuth is not None:
        args["azimuth"] = azimuth
    if elevation is not None:
        args["elevation"] = elevation
    return _plan(request_id, VIEW_TOOL, args)


VIEW_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "width": {"type": "integer", "minimum": MIN_SIDE, "maximum": MAX_SIDE},
        "height": {"type": "integer", "minimum": MIN_SIDE, "maximum": MAX_SIDE},
        "azimuth": {"type": "number", "minimum": -360, "maximum": 360},
        "elevation": {"type": "number", "minimum": -90, "maximum": 90},
        "camera": {"type": "string", "minLength": 1, "maxLength": 63},
        "shading": {"type": "string", "enum": list(SHADINGS)},
    },
    "required": ["width", "height"],
    "additionalProperties": False,
}


def view_problem(args: dict[str, Any]) -> str | None:
    """Why ``args`` do not name one view; None when they do (the schema holds already)."""
    if "camera" in args and ("azimuth" in args or "elevation" in args):
        return "give a camera or an azimuth/elevation, not both"
    if args.get("shading") == "rendered" and max(args["width"], args["height"]) > MAX_RENDERED_SIDE:
        return (
            f"a rendered view is at most {MAX_RENDERED_SIDE} pixels a side (Cycles takes "
            "seconds per frame); ask a smaller one, or shading `material`"
        )
    return None


def tool_entry() -> dict[str, Any]:
    """``scene.render_view`` as an MCP ``tools/list`` entry for the catalog."""
    return {
        "name": VIEW_TOOL,
        "description": f"Render the scene to a PNG of {MIN_SIDE} to {MAX_SIDE} pixels a "
        "side, through a named camera or from an azimuth/elevation in degrees (default "
        f"{DEFAULT_AZIMUTH:g}/{DEFAULT_ELEVATION:g}) framing everything, shaded "
        f"{'/'.join(SHADINGS)} (default {DEFAULT_SHADING}: material colours and textures); "
        "changes nothing. "
        "The receipt names the staged image (`image`: sha256:<hex>).",
        "inputSchema": VIEW_SCHEMA,
        "_meta": {"blendmesh": {"safety_level": "read_only", "compensation": "none"}},
    }
