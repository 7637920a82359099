"""Text objects: text.create and text.set.

A text's font is a font datablock the scene already holds, and only Blender's built-in
font or one packed into the file: a font stored as a path would be read from the host's
disk whenever Blender draws the text (services/bridge/blendfiles/references.py refuses such
a file on load for the same reason). A font file reaches a scene packed, through the asset import.

Extrude and bevel make geometry Blender only knows once it evaluates the text; the
geometry budget measures the evaluated scene after the call (``bounded.py``), and the
limits below keep one call's text from making more than a budget can hold in the first
place (1,024 characters at the finest bevel are a few hundred thousand vertices).
"""

from __future__ import annotations

from typing import Any

import bpy

from blendmesh_addon.tools.objects import require_free_name
from services.bridge.scene.canonical import r

from ..registry import Outcome, ToolError, Touches, name_schema, tool
from .answers import INTEGER, NUMBER, STRING, answer, deleting
from .placing import link_new, location_schema, require_kind, rotation_schema

MAX_BODY = 1024  # characters of one text object
BUILTIN_FONT = "<builtin>"  # how Blender names the font it carries inside itself
ALIGN = {"left": "LEFT", "center": "CENTER", "right": "RIGHT", "justify": "JUSTIFY"}

SHAPE: dict[str, Any] = {
    "size": {"type": "number", "minimum": 0.001, "maximum": 1000, "description": "Letter height."},
    "extrude": {
        "type": "number",
        "minimum": 0,
        "maximum": 100,
        "description": "Depth the letters are extruded to, in scene units (0: flat).",
    },
    "bevel_depth": {
        "type": "number",
        "minimum": 0,
        "maximum": 10,
        "description": "Rounded edge width, in scene units (0: sharp).",
    },
    "bevel_resolution": {
        "type": "integer",
        "minimum": 0,
        "maximum": 8,
        "description": "Segments of the rounded edge (more is smoother and heavier).",
    },
    "align": {"enum": sorted(ALIGN), "description": "Horizontal alignment (default left)."},
}
BODY_SCHEMA: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": MAX_BODY,
    "description": f"The text, 1 to {MAX_BODY} printable characters on one line.",
}
FONT_SCHEMA = name_schema(
    "A font already in the scene, built in or packed into the file (default: Blender's "
    "built-in font). Import a font file as an asset to pack it."
)
TEXT_ANSWER = answer(
    {
        "name": STRING,
        "body": STRING,
        "font": STRING,
        "size": NUMBER,
        "extrude": NUMBER,
        "bevel_depth": NUMBER,
        "bevel_resolution": INTEGER,
        "align": STRING,
    }
)


def font(name: str | None) -> bpy.types.VectorFont:
    """The font ``name`` (None: the built-in one), refused unless built in or packed."""
    if name is None:
        found = next((f for f in bpy.data.fonts if f.filepath == BUILTIN_FONT), None)
        return found or bpy.data.fonts.load(BUILTIN_FONT)
    found = bpy.data.fonts.get(name)
    if found is None:
        have = sorted(f.name for f in bpy.data.fonts if _inside(f))
        raise ToolError(
            "not_found",
            f"font {name!r} is not in the scene; name one of {have or 'none yet'}, leave "
            "font out for Blender's built-in font, or import a font file as an asset",
        )
    if not _inside(found):
        raise ToolError(
            "invalid_input",
            f"font {name!r} is stored as a path outside the scene; pack it into the file "
            "(import the font file as an asset) or leave font out",
        )
    return found


def _inside(f: bpy.types.VectorFont) -> bool:
    return f.filepath == BUILTIN_FONT or f.packed_file is not None


def values(ob: bpy.types.Object) -> dict[str, Any]:
    """What a text tool answers: the text object's body, font and shape."""
    data = ob.data
    return {
        "name": ob.name,
        "body": data.body,
        "font": data.font.name if data.font is not None else "",
        "size": r(data.size),
        "extrude": r(data.extrude),
        "bevel_depth": r(data.bevel_depth),
        "bevel_resolution": int(data.bevel_resolution),
        "align": next((k for k, v in ALIGN.items() if v == data.align_x), "left"),
    }


def _shape(data: bpy.types.TextCurve, args: dict[str, Any]) -> None:
    if "body" in args:
        data.body = args["body"]
    for key in ("size", "extrude", "bevel_depth", "bevel_resolution"):
        if key in args:
            setattr(data, key, args[key])
    if "align" in args:
        data.align_x = ALIGN[args["align"]]


@tool(
    name="text.create",
    touches=Touches(("name",)),
    description=(
        "Add a text object with the given body, in Blender's built-in font or a font packed "
        "into the scene; size, extrude and bevel shape its letters. An existing name is a "
        "conflict. Extruded and bevelled text is held to the geometry budget."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["body"],
        "properties": {
            "body": BODY_SCHEMA,
            "name": name_schema("Object name (default Text)."),
            "font": FONT_SCHEMA,
            "location": location_schema("Location in scene units (default 0,0,0)."),
            "rotation": rotation_schema("Default 0,0,0 (reading along +X, facing +Z)."),
            **SHAPE,
        },
    },
    output_schema=TEXT_ANSWER,
    safety_level="safe_write",
    idempotence_class="non_idempotent",
    compensation="object.delete",
)
def create(args: dict[str, Any]) -> Outcome:
    """Check the name and the font, then create; the inverse deletes the text."""
    name = args.get("name", "Text")
    require_free_name(name)
    face = font(args.get("font"))
    data = bpy.data.curves.new(name, "FONT")
    data.font = face
    _shape(data, args)
    ob = link_new(name, data, args)
    return Outcome(
        data=values(ob),
        mutated=True,
        message=f"created text {ob.name!r}",
        compensation=deleting(ob.name),
    )


@tool(
    name="text.set",
    touches=Touches(("name",)),
    description=(
        "Change a text object's body, font (built in or packed), size, extrude, bevel or "
        "alignment. Naming an object that is not a text is invalid."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["name"],
        "minProperties": 2,
        "properties": {
            "name": name_schema("Text object name."),
            "body": BODY_SCHEMA,
            "font": FONT_SCHEMA,
            **SHAPE,
        },
    },
    output_schema=TEXT_ANSWER,
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="checkpoint",
)
def set_text(args: dict[str, Any]) -> Outcome:
    """Check the object and the font, then set."""
    ob = require_kind(args["name"], "FONT", "text.set")
    face = font(args["font"]) if "font" in args else None
    if face is not None:
        ob.data.font = face
    _shape(ob.data, args)
    return Outcome(data=values(ob), mutated=True, message=f"set text {ob.name!r}")
