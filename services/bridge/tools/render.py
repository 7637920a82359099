"""How the scene renders: render.set (engine, samples, resolution, frame range) and
render.color (colour management's view transform, look, exposure and gamma).

These are scene settings only: the previews and views blendmesh renders set their own
engine, samples and size and put the scene's back (preview.py), so a scene set to 4,096
Cycles samples costs nothing until someone renders it themselves.
"""

from __future__ import annotations

from typing import Any

import bpy

from services.bridge.scene.output_state import ENGINES, color_values, render_values

from ..registry import Outcome, ToolError, Touches, tool
from .answers import INTEGER, NUMBER, STRING, answer

VIEWS = ["AgX", "Standard", "Filmic", "Filmic Log", "Khronos PBR Neutral", "False Color", "Raw"]
# Looks as the UI lists them; Blender names AgX's after it ("AgX - Punchy"), Filmic's not.
LOOKS = [
    "None", "Punchy", "Greyscale", "Very High Contrast", "High Contrast", "Medium High Contrast",
    "Base Contrast", "Medium Contrast", "Medium Low Contrast", "Low Contrast", "Very Low Contrast",
]  # fmt: skip
MAX_FRAME = 1_048_574  # Blender's last frame
RENDER_ANSWER = answer(
    {
        "engine": STRING,
        "samples": INTEGER,
        "resolution": {"type": "array", "items": INTEGER, "minItems": 2, "maxItems": 2},
        "resolution_percentage": INTEGER,
        "frame_start": INTEGER,
        "frame_end": INTEGER,
        "fps": INTEGER,
    }
)
COLOR_ANSWER = answer(
    {"view_transform": STRING, "look": STRING, "exposure": NUMBER, "gamma": NUMBER}
)


@tool(
    name="render.set",
    touches=Touches(),  # scene settings are in the scene-level digest, always recomputed
    description=(
        "Set how the scene renders: engine (eevee, cycles, workbench), samples (of the "
        "engine set, 1..4096), resolution in pixels, its percentage, the frame range and "
        "frames per second. Settings left out stay as they are."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "minProperties": 1,
        "properties": {
            "engine": {"enum": sorted(ENGINES)},
            "samples": {"type": "integer", "minimum": 1, "maximum": 4096},
            "resolution": {
                "type": "array",
                "items": {"type": "integer", "minimum": 4, "maximum": 16384},
                "minItems": 2,
                "maxItems": 2,
                "description": "[width, height] in pixels.",
            },
            "resolution_percentage": {"type": "integer", "minimum": 1, "maximum": 100},
            "frame_start": {"type": "integer", "minimum": 0, "maximum": MAX_FRAME},
            "frame_end": {"type": "integer", "minimum": 0, "maximum": MAX_FRAME},
            "fps": {"type": "integer", "minimum": 1, "maximum": 240},
        },
    },
    output_schema=RENDER_ANSWER,
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="checkpoint",
)
def set_render(args: dict[str, Any]) -> Outcome:
    """Check the frame range against what stays, then set."""
    scene = bpy.context.scene
    start = args.get("frame_start", scene.frame_start)
    end = args.get("frame_end", scene.frame_end)
    if start > end:
        raise ToolError(
            "invalid_input",
            f"frame_start {start} is after frame_end {end}; give a range that runs forward",
        )
    render = scene.render
    if "engine" in args:
        render.engine = ENGINES[args["engine"]]
    if "samples" in args:
        if render.engine == "CYCLES":
            scene.cycles.samples = args["samples"]
        else:
            scene.eevee.taa_render_samples = args["samples"]
    if "resolution" in args:
        render.resolution_x, render.resolution_y = args["resolution"]
    if "resolution_percentage" in args:
        render.resolution_percentage = args["resolution_percentage"]
    # End before start when the range moves up, so Blender never clamps one to the other.
    if start > scene.frame_end:
        scene.frame_end, scene.frame_start = end, start
    else:
        scene.frame_start, scene.frame_end = start, end
    if "fps" in args:
        render.fps, render.fps_base = args["fps"], 1.0
    values = render_values(scene)
    return Outcome(data=values, mutated=True, message=f"render with {values['engine']}")


@tool(
    name="render.color",
    touches=Touches(),
    description=(
        "Set colour management: the view transform (AgX, Standard, Filmic, ...), a look of "
        "that view (Punchy, High Contrast, ...; None for none), exposure in stops and gamma."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "minProperties": 1,
        "properties": {
            "view_transform": {"enum": VIEWS},
            "look": {"enum": LOOKS},
            "exposure": {"type": "number", "minimum": -32, "maximum": 32},
            "gamma": {"type": "number", "minimum": 0.01, "maximum": 5},
        },
    },
    output_schema=COLOR_ANSWER,
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="checkpoint",
)
def set_color(args: dict[str, Any]) -> Outcome:
    """Check the look exists for the view it will be under, then set."""
    scene = bpy.context.scene
    view = scene.view_settings
    transform = args.get("view_transform", view.view_transform)
    look = args.get("look")
    if look is None and "view_transform" in args:
        look = "None"  # a look belongs to its view; a new view starts without one
    before = (view.view_transform, view.look)
    if "view_transform" in args:
        view.view_transform = transform
    if look is not None and not _set_look(view, transform, look):
        view.view_transform, view.look = before
        raise ToolError(
            "invalid_input",
            f"the view transform {transform} has no look {look!r}; AgX and Filmic have "
            "looks, the other views take look None",
        )
    for key in ("exposure", "gamma"):
        if key in args:
            setattr(view, key, args[key])
    values = color_values(scene)
    return Outcome(data=values, mutated=True, message=f"view transform {values['view_transform']}")


def _set_look(view: bpy.types.ColorManagedViewSettings, transform: str, look: str) -> bool:
    for identifier in (look,) if look == "None" else (f"{transform} - {look}", look):
        try:
            view.look = identifier
        except TypeError:
            continue
        return True
    return False
