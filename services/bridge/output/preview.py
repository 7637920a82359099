"""``blendmesh/scene.render_preview``: a small PNG of the current scene, headless.

Not a planner tool: the executor calls it after a commit. Workbench renders in
background bpy through its software GL context; where that context is missing, Cycles on
the CPU with a few samples takes over. A scene without a camera or a light is shot from a
temporary camera (and lit by a temporary sun) framing its bounding box; both are removed
and every render setting touched is restored, so the scene's fingerprint never changes.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import bpy
from mathutils import Vector

from contracts.bridge import Preview, PreviewEngine
from contracts.views import Shading, ViewParams
from services.bridge.tools.scene import SceneError, SceneRefused

log = logging.getLogger("blendmesh.bridge")

ENGINES: tuple[PreviewEngine, ...] = ("BLENDER_WORKBENCH", "CYCLES")  # in the order tried
_TEMP = "blendmesh.preview"
_NOT_GEOMETRY = frozenset({"CAMERA", "LIGHT", "LIGHT_PROBE", "SPEAKER", "EMPTY"})
# Looking down at the scene from the front right, as Blender's default camera does.
_VIEW_DIRECTION = Vector((1.0, -1.0, 0.8)).normalized()


def _bounds(scene: bpy.types.Scene) -> tuple[Vector, float]:
    """Centre and radius of what renders (a unit sphere at the origin for an empty scene)."""
    corners = [
        ob.matrix_world @ Vector(corner)
        for ob in scene.objects
        if ob.type not in _NOT_GEOMETRY and ob.visible_get()
        for corner in ob.bound_box
    ]
    if not corners:
        return Vector((0.0, 0.0, 0.0)), 1.0
    low = Vector(tuple(min(c[i] for c in corners) for i in range(3)))
    high = Vector(tuple(max(c[i] for c in corners) for i in range(3)))
    return (low + high) / 2, max((high - low).length / 2, 0.1)


@contextmanager
def _restored(owner: Any, *names: str) -> Iterator[None]:
    saved = {name: getattr(owner, name) for name in names}
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(owner, name, value)


@contextmanager
def _temporary(scene: bpy.types.Scene, name: str, data: Any) -> Iterator[bpy.types.Object]:
    ob = bpy.data.objects.new(name, data)
    scene.collection.objects.link(ob)
    try:
        yield ob
    finally:
        bpy.data.objects.remove(ob, do_unlink=True)
        if data.users == 0:
            (bpy.data.cameras if data.id_type == "CAMERA" else bpy.data.lights).remove(data)


@contextmanager
def _staged(scene: bpy.types.Scene, direction: Vector | None = None) -> Iterator[None]:
    """A camera and a light for the render, only for its duration: a camera from
    ``direction`` (towards the scene's centre) when one is asked for, or when the scene
    has none."""
    center, radius = _bounds(scene)
    lit = any(ob.type == "LIGHT" and ob.visible_get() for ob in scene.objects)
    with _restored(scene, "camera"):
        if scene.camera is None or direction is not None:
            cam_data = bpy.data.cameras.new(_TEMP)
            cam_data.clip_end = max(1000.0, radius * 10)
            with _temporary(scene, _TEMP, cam_data) as cam:
                distance = radius / math.sin(min(cam_data.angle_x, cam_data.angle_y) / 2) * 1.1
                cam.location = (
                    center + (_VIEW_DIRECTION if direction is None else direction) * distance
                )
                cam.rotation_euler = (center - cam.location).to_track_quat("-Z", "Y").to_euler()
                scene.camera = cam
                with _lit(scene, lit):
                    yield
        else:
            with _lit(scene, lit):
                yield


@contextmanager
def _lit(scene: bpy.types.Scene, lit: bool) -> Iterator[None]:
    if lit:
        yield
        return
    sun_data = bpy.data.lights.new(_TEMP, "SUN")
    sun_data.energy = 3.0
    with _temporary(scene, _TEMP, sun_data) as sun:
        sun.rotation_euler = (math.radians(40), 0.0, math.radians(30))
        yield


def _base_colour(material: bpy.types.Material) -> tuple[float, ...] | None:
    """The colour a material's Principled BSDF is set to; None when it has none, or when
    a texture drives it (Workbench's texture colouring shows that image itself)."""
    tree = material.node_tree
    for node in tree.nodes if tree is not None else ():
        if node.type == "BSDF_PRINCIPLED":
            base = node.inputs.get("Base Color")
            if base is not None and not base.is_linked:
                return tuple(base.default_value)
    return None


@contextmanager
def _shaded(scene: bpy.types.Scene, shading: Shading) -> Iterator[None]:
    """Workbench coloured as ``shading`` asks, only for the render. ``material`` shows
    each material's node colour and image textures: Workbench draws a material's viewport
    colour, which a node material leaves at grey, so that colour is set from the node for
    the render and put back after (the scene's fingerprint reads it)."""
    display = scene.display.shading
    with _restored(display, "color_type"):
        if shading != "material":
            display.color_type = "MATERIAL"
            yield
            return
        display.color_type = "TEXTURE"
        saved = {m.name: tuple(m.diffuse_color) for m in bpy.data.materials}
        try:
            for material in bpy.data.materials:
                colour = _base_colour(material)
                if colour is not None:
                    material.diffuse_color = colour
            yield
        finally:
            for material in bpy.data.materials:
                if material.name in saved:
                    material.diffuse_color = saved[material.name]


def _render(scene: bpy.types.Scene, engine: str, path: str) -> None:
    render = scene.render
    scene.render.engine = engine
    if engine == "CYCLES":
        scene.cycles.device = "CPU"
        scene.cycles.samples = 4
        scene.cycles.use_denoising = False
    render.filepath = path
    bpy.ops.render.render(write_still=True)
    if not os.path.isfile(path) or os.path.getsize(path) == 0:
        raise SceneError(f"{engine} wrote no image")


def render_preview(
    path: str,
    width: int = 320,
    height: int = 240,
    engine: PreviewEngine | None = None,
    direction: Vector | None = None,
    shading: Shading = "material",
) -> Preview:
    """Render the scene to a PNG at ``path`` with ``engine``, or the first of ENGINES that
    works; from ``direction`` (see ``_staged``) when given, Workbench coloured as
    ``shading`` says (``rendered`` is Cycles)."""
    path = os.path.abspath(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    scene = bpy.context.scene
    render = scene.render
    started = time.perf_counter()
    errors: list[str] = []
    with (
        _restored(render, "engine", "filepath", "resolution_x", "resolution_y"),
        _restored(render, "resolution_percentage", "use_file_extension"),
        _restored(render.image_settings, "file_format", "color_mode"),
        _restored(scene.cycles, "device", "samples", "use_denoising"),
        _staged(scene, direction),
        _shaded(scene, shading),
    ):
        render.resolution_x, render.resolution_y = width, height
        render.resolution_percentage = 100
        render.use_file_extension = False
        render.image_settings.file_format = "PNG"
        render.image_settings.color_mode = "RGBA"
        if shading == "rendered":
            engine = "CYCLES"
        for candidate in (engine,) if engine else ENGINES:
            if os.path.exists(path):
                os.remove(path)
            try:
                _render(scene, candidate, path)
            except (RuntimeError, SceneError, TypeError) as err:
                log.warning("preview with %s failed: %s", candidate, err)
                errors.append(f"{candidate}: {err}")
                continue
            ms = (time.perf_counter() - started) * 1000
            return Preview(path=path, width=width, height=height, engine=candidate, ms=ms)
    raise SceneError("cannot render a preview: " + "; ".join(errors))


def direction_of(azimuth: float, elevation: float) -> Vector:
    """Where a camera stands, seen from the scene's centre: azimuth 0 from -Y, 90 from +X;
    elevation 90 from straight above (kept just off it, where "up" is still defined)."""
    az = math.radians(azimuth)
    el = math.radians(max(-89.9, min(89.9, elevation)))
    return Vector((math.sin(az) * math.cos(el), -math.cos(az) * math.cos(el), math.sin(el)))


def render_view(want: ViewParams) -> Preview:
    """``blendmesh/scene.render_view``: through the scene's camera ``want.camera``, or from
    a temporary camera at the asked angle; the scene keeps its own camera either way."""
    scene = bpy.context.scene
    if want.camera is None:
        direction = direction_of(want.azimuth, want.elevation)
        return render_preview(
            want.path, want.width, want.height, direction=direction, shading=want.shading
        )
    camera = scene.objects.get(want.camera)
    if camera is None or camera.type != "CAMERA":
        cameras = sorted(ob.name for ob in scene.objects if ob.type == "CAMERA")[:10]
        known = ", ".join(repr(c) for c in cameras) or "none"
        raise SceneRefused(
            f"the scene has no camera named {want.camera!r} (its cameras: {known}); name one "
            "of them, or give an azimuth and elevation instead"
        )
    with _restored(scene, "camera"):
        scene.camera = camera
        return render_preview(want.path, want.width, want.height, shading=want.shading)
