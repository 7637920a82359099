"""How an object shows: object.shade (smooth or flat faces), object.visibility."""

from __future__ import annotations

from typing import Any

import numpy as np

from services.bridge.scene.scene_state import smooth_faces

from ..registry import Outcome, Touches, name_schema, tool
from .answers import BOOLEAN, COUNT, STRING, answer
from .objects import require_object
from .placing import require_kind


@tool(
    name="object.shade",
    touches=Touches(("name",)),
    description=(
        "Shade every face of a mesh object smooth or flat. A mesh shared by linked duplicates "
        "changes for all of them."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["name", "smooth"],
        "properties": {
            "name": name_schema("Mesh object name."),
            "smooth": {"type": "boolean", "description": "true: smooth, false: flat."},
        },
    },
    output_schema=answer({"name": STRING, "smooth": BOOLEAN, "faces": COUNT}),
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="checkpoint",
)
def shade(args: dict[str, Any]) -> Outcome:
    """Set every face's smooth flag; already so is a no-op."""
    ob = require_kind(args["name"], "MESH", "object.shade")
    mesh, smooth = ob.data, args["smooth"]
    faces = len(mesh.polygons)
    wanted = faces if smooth else 0
    data = {"name": ob.name, "smooth": smooth, "faces": faces}
    if smooth_faces(mesh) == wanted:
        return Outcome(data=data, mutated=False, message=f"{ob.name!r} is already shaded so")
    mesh.polygons.foreach_set("use_smooth", np.full(faces, smooth, dtype=bool))
    mesh.update()
    return Outcome(
        data=data,
        mutated=True,
        message=f"shaded {ob.name!r} {'smooth' if smooth else 'flat'}",
    )


@tool(
    name="object.visibility",
    touches=Touches(("name",)),
    description=(
        "Show or hide an object in the viewport and/or in renders: true shows, false hides. "
        "Give at least one of viewport and render."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["name"],
        "anyOf": [{"required": ["viewport"]}, {"required": ["render"]}],
        "properties": {
            "name": name_schema("Object name."),
            "viewport": {"type": "boolean", "description": "Visible in the viewport."},
            "render": {"type": "boolean", "description": "Visible in renders."},
        },
    },
    output_schema=answer({"name": STRING, "viewport": BOOLEAN, "render": BOOLEAN}),
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="checkpoint",
)
def visibility(args: dict[str, Any]) -> Outcome:
    """Set the object's global hide flags; already so is a no-op."""
    ob = require_object(args["name"])
    changes = {
        f"hide_{key}": not args[key]
        for key in ("viewport", "render")
        if key in args and getattr(ob, f"hide_{key}") == args[key]
    }
    for attr, hidden in changes.items():
        setattr(ob, attr, hidden)
    data = {"name": ob.name, "viewport": not ob.hide_viewport, "render": not ob.hide_render}
    return Outcome(
        data=data,
        mutated=bool(changes),
        message=f"{ob.name!r}: viewport {data['viewport']}, render {data['render']}",
    )
