"""HDRI worlds from the studio lights Blender ships: world.hdri and world.hdris.

An HDRI is named, never given as a path: the names are the files of Blender's own
``datafiles/studiolights/world`` folder (forest, city, studio, ...), read from there and
packed into the scene, so the scene's file holds the picture itself and refers to nothing
on this host (the image keeps only a relative stand-in for a path, which is what a file
packed elsewhere would carry). Nothing a caller says ever becomes part of a path: the name
must be one of the names listed, checked before anything is read.
"""

from __future__ import annotations

import math
import os
from typing import Any

import bpy

from services.bridge.scene.canonical import r
from services.bridge.scene.output_state import HDRI_PREFIX, hdri_of

from ..registry import Outcome, ToolError, Touches, tool
from .answers import NAMES, NUMBER, STRING, answer, nullable
from .lights import new_world

FOLDER = ("studiolights", "world")
SUFFIX = ".exr"
MAX_HDRI_BYTES = 16 * 1024 * 1024  # Blender's own are under 1 MB; a larger one is not theirs


def folder() -> str:
    """Where this Blender keeps its studio lights ('' when it ships none)."""
    return bpy.utils.system_resource("DATAFILES", path=os.path.join(*FOLDER)) or ""


def names() -> list[str]:
    """The HDRIs this Blender ships, by name."""
    where = folder()
    if not where or not os.path.isdir(where):
        return []
    return sorted(f[: -len(SUFFIX)] for f in os.listdir(where) if f.endswith(SUFFIX))


def _image(name: str) -> bpy.types.Image:
    label = HDRI_PREFIX + name
    held = bpy.data.images.get(label)
    if held is not None and held.packed_file is not None:
        return held
    path = os.path.join(folder(), name + SUFFIX)
    if os.path.getsize(path) > MAX_HDRI_BYTES:
        raise ToolError("invalid_input", f"the studio light {name!r} is larger than an HDRI may be")
    with open(path, "rb") as file:
        data = file.read()
    # Packed from its bytes, never loaded by path: Blender keeps a loaded image's path in
    # a fixed buffer that a later, shorter path only partly overwrites, and the saved
    # scene would carry the rest of it. The stand-in path is what a packed copy names.
    image = bpy.data.images.new(label, 1, 1, float_buffer=True)
    image.filepath_raw = f"//{name}{SUFFIX}"
    image.source = "FILE"
    image.pack(data=data, data_len=len(data))
    return image


def _wire(world: bpy.types.World, image: bpy.types.Image, rotation: float) -> None:
    """Environment Texture (rotated by a Mapping about Z) into the Background's Color."""
    tree = world.node_tree
    background = next((n for n in tree.nodes if n.type == "BACKGROUND"), None)
    if background is None:
        background = tree.nodes.new("ShaderNodeBackground")
        output = next((n for n in tree.nodes if n.type == "OUTPUT_WORLD"), None)
        output = output or tree.nodes.new("ShaderNodeOutputWorld")
        tree.links.new(background.outputs["Background"], output.inputs["Surface"])
    texture = next((n for n in tree.nodes if n.type == "TEX_ENVIRONMENT"), None)
    texture = texture or tree.nodes.new("ShaderNodeTexEnvironment")
    mapping = next((n for n in tree.nodes if n.type == "MAPPING"), None)
    mapping = mapping or tree.nodes.new("ShaderNodeMapping")
    coords = next((n for n in tree.nodes if n.type == "TEX_COORD"), None)
    coords = coords or tree.nodes.new("ShaderNodeTexCoord")
    texture.image = image
    mapping.inputs["Rotation"].default_value = (0.0, 0.0, math.radians(rotation))
    tree.links.new(coords.outputs["Generated"], mapping.inputs["Vector"])
    tree.links.new(mapping.outputs["Vector"], texture.inputs["Vector"])
    tree.links.new(texture.outputs["Color"], background.inputs["Color"])


@tool(
    name="world.hdri",
    touches=Touches(),  # the world is in the scene-level digest, always recomputed
    description=(
        "Light the scene with one of the HDRIs Blender ships (world.hdris lists them: "
        "city, courtyard, forest, interior, night, studio, sunrise, sunset), packed into the "
        "scene, at a strength and turned about Z by a rotation in degrees."
    ),
    input_schema={
        "type": "object",
        "additionalProperties": False,
        "required": ["hdri"],
        "properties": {
            "hdri": {
                "type": "string",
                "pattern": "^[a-z][a-z0-9_]{0,31}$",
                "description": "The HDRI's name, e.g. forest (see world.hdris).",
            },
            "strength": {"type": "number", "minimum": 0, "maximum": 1000},
            "rotation": {"type": "number", "minimum": -360, "maximum": 360},
        },
    },
    output_schema=answer(
        {"world": STRING, "hdri": STRING, "strength": NUMBER, "rotation": NUMBER, "bytes": NUMBER}
    ),
    safety_level="safe_write",
    idempotence_class="idempotent",
    compensation="checkpoint",
)
def set_hdri(args: dict[str, Any]) -> Outcome:
    """Check the name is one Blender ships, then pack it and wire the world to show it."""
    name = args["hdri"]
    shipped = names()
    if name not in shipped:
        raise ToolError(
            "not_found",
            f"no HDRI {name!r}; this Blender ships {', '.join(shipped) or 'none'}",
        )
    image = _image(name)
    scene = bpy.context.scene
    world = scene.world or bpy.data.worlds.get("World") or new_world("World")
    if world.node_tree is None:
        world.use_nodes = True
    scene.world = world
    rotation = args.get("rotation", 0.0)
    _wire(world, image, rotation)
    background = next(n for n in world.node_tree.nodes if n.type == "BACKGROUND")
    if "strength" in args:
        background.inputs["Strength"].default_value = args["strength"]
    return Outcome(
        data={
            "world": world.name,
            "hdri": name,
            "strength": r(background.inputs["Strength"].default_value),
            "rotation": r(rotation),
            "bytes": image.packed_file.size,
        },
        mutated=True,
        message=f"the world shows the HDRI {name!r}",
    )


@tool(
    name="world.hdris",
    description="List the HDRIs Blender ships that world.hdri takes, and the one shown now.",
    input_schema={"type": "object", "additionalProperties": False, "properties": {}},
    output_schema=answer({"hdris": NAMES, "current": nullable(STRING)}),
    safety_level="read_only",
    idempotence_class="idempotent",
    compensation="none",
)
def list_hdris(args: dict[str, Any]) -> Outcome:
    shown = hdri_of(bpy.context.scene.world)
    return Outcome(
        data={"hdris": names(), "current": shown["name"] if shown else None},
        mutated=False,
        message="HDRIs listed",
    )
