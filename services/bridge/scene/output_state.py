"""The snapshot's entries for text, curves, constraints, bones, render settings, colour
management and HDRI worlds, so each tool that changes one changes the scene hash (a
rollback or a replay of render.set is proved like any other).

As in ``scene_state``, an entry is left out while it holds what a new object or an empty
factory scene has, so the hash of a scene that uses none of them is unchanged and stored
revisions still verify.
"""

from __future__ import annotations

import math
from typing import Any

import bpy

from services.bridge.scene.canonical import r

ENGINES = {"eevee": "BLENDER_EEVEE", "cycles": "CYCLES", "workbench": "BLENDER_WORKBENCH"}
HDRI_PREFIX = "HDRI "  # the packed image's name: "HDRI forest"
# What Blender's factory scene holds: left out of the snapshot while unchanged.
FACTORY_RENDER = {
    "engine": "eevee",
    "samples": 64,
    "resolution": [1920, 1080],
    "resolution_percentage": 100,
    "frame_start": 1,
    "frame_end": 250,
    "fps": 24,
}
FACTORY_COLOR = {"view_transform": "AgX", "look": "None", "exposure": 0.0, "gamma": 1.0}


def render_values(scene: bpy.types.Scene) -> dict[str, Any]:
    """Engine, samples of that engine, resolution, frame range and fps, in the tools' words."""
    render = scene.render
    engine = next((k for k, v in ENGINES.items() if v == render.engine), render.engine.lower())
    samples = scene.cycles.samples if render.engine == "CYCLES" else scene.eevee.taa_render_samples
    return {
        "engine": engine,
        "samples": int(samples),
        "resolution": [int(render.resolution_x), int(render.resolution_y)],
        "resolution_percentage": int(render.resolution_percentage),
        "frame_start": int(scene.frame_start),
        "frame_end": int(scene.frame_end),
        "fps": int(render.fps),
    }


def color_values(scene: bpy.types.Scene) -> dict[str, Any]:
    """Colour management, the look without its view's prefix ("Punchy", not "AgX - Punchy")."""
    view = scene.view_settings
    return {
        "view_transform": view.view_transform,
        "look": view.look.split(" - ", 1)[-1],
        "exposure": r(view.exposure),
        "gamma": r(view.gamma),
    }


def hdri_of(world: bpy.types.World | None) -> dict[str, Any] | None:
    """The HDRI a world shows (its Environment Texture's image, the mapping's Z rotation in
    degrees), or None when it shows none."""
    if world is None or world.node_tree is None:
        return None
    nodes = sorted(
        (n for n in world.node_tree.nodes if n.type == "TEX_ENVIRONMENT" and n.image),
        key=lambda n: n.name,
    )
    if not nodes:
        return None
    mapping = next((n for n in world.node_tree.nodes if n.type == "MAPPING"), None)
    turn = mapping.inputs["Rotation"].default_value[2] if mapping is not None else 0.0
    name = nodes[0].image.name.removeprefix(HDRI_PREFIX)
    return {"name": name, "rotation": r(math.degrees(turn))}


def scene_entries(scene: bpy.types.Scene) -> dict[str, Any]:
    """The scene's render, colour and HDRI entries that differ from a factory scene."""
    state: dict[str, Any] = {}
    render = render_values(scene)
    if render != FACTORY_RENDER:
        state["render"] = render
    color = color_values(scene)
    if color != FACTORY_COLOR:
        state["color"] = color
    hdri = hdri_of(scene.world)
    if hdri is not None:
        state["hdri"] = hdri
    return state


def object_entries(ob: bpy.types.Object) -> dict[str, Any]:
    """An object's constraints, an armature's bones and a text's body and shape."""
    entry: dict[str, Any] = {}
    if ob.constraints:
        entry["constraints"] = [
            [c.name, c.type, getattr(getattr(c, "target", None), "name", None)]
            for c in ob.constraints
        ]
    if ob.type == "ARMATURE":
        bones = ob.data.bones
        entry["bones"] = [[b.name, b.parent.name if b.parent else None] for b in bones]
        posed = [_posed(b) for b in ob.pose.bones]
        if any(posed):
            entry["pose"] = [p for p in posed if p]
    elif ob.type == "FONT":
        data = ob.data
        font = data.font.name if data.font is not None else None
        entry["text"] = [data.body, font, r(data.size), r(data.extrude), r(data.bevel_depth)]
    elif ob.type == "CURVE":
        data = ob.data
        entry["curve"] = [len(data.splines), r(data.bevel_depth), r(data.extrude)]
    return entry


def _posed(bone: bpy.types.PoseBone) -> list[Any] | None:
    """A bone's pose off its rest position, or None at rest."""
    values = [
        [r(v) for v in bone.location],
        [r(v) for v in bone.rotation_euler],
        [r(v) for v in bone.rotation_quaternion],
        [r(v) for v in bone.scale],
    ]
    rest = [[0.0] * 3, [0.0] * 3, [1.0, 0.0, 0.0, 0.0], [1.0] * 3]
    return None if values == rest else [bone.name, *values]
