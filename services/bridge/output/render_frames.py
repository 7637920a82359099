"""``blendmesh/scene.render_frame``: one frame of a render job, headless.

Runs in the bridge, the one process that imports ``bpy``. The frame is rendered through
the scene's camera, or through a temporary one framing the scene when it has none (as a
preview is, ``preview._staged``); every render setting touched is put back, so the
loaded revision stays as it was for the job's next frame.

Cycles renders on the CPU. EEVEE needs an OpenGL context: with bpy 5.0 in the
background it gets a software one and renders, but compiling its shaders on it takes tens
of seconds for the first frame of a process (docs/renders.md).
"""

from __future__ import annotations

import os
import time

import bpy

from contracts.renders import BLENDER_ENGINE, FrameImage, FrameParams
from services.bridge.output.preview import _restored, _staged
from services.bridge.tools.scene import SceneError


def render_frame(want: FrameParams) -> FrameImage:
    path = os.path.abspath(want.path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    scene = bpy.context.scene
    render = scene.render
    spec = want.spec
    engine = BLENDER_ENGINE[spec.engine]
    started = time.perf_counter()
    with (
        _restored(render, "engine", "filepath", "resolution_x", "resolution_y"),
        _restored(render, "resolution_percentage", "use_file_extension"),
        _restored(render.image_settings, "file_format", "color_mode"),
        _restored(scene.cycles, "device", "samples", "use_denoising"),
        _restored(scene.eevee, "taa_render_samples"),
        _restored(scene, "frame_current"),
        _staged(scene),
    ):
        try:
            render.engine = engine
        except TypeError:  # bpy refuses an engine this build lacks
            raise SceneError(
                f"this Blender has no {spec.engine} engine: ask for cycles or workbench"
            ) from None
        render.resolution_x, render.resolution_y = spec.width, spec.height
        render.resolution_percentage = 100
        render.use_file_extension = False
        render.image_settings.file_format = "PNG"
        render.image_settings.color_mode = "RGBA"
        if engine == "CYCLES":
            scene.cycles.device = "CPU"
            scene.cycles.samples = spec.samples
            scene.cycles.use_denoising = False  # the denoiser's own cost is no one's budget
        elif engine == "BLENDER_EEVEE":
            scene.eevee.taa_render_samples = spec.samples
        scene.frame_set(want.frame)
        render.filepath = path
        if os.path.exists(path):
            os.remove(path)
        try:
            bpy.ops.render.render(write_still=True)
        except RuntimeError as err:
            raise SceneError(f"{spec.engine} could not render frame {want.frame}: {err}") from None
    if not os.path.isfile(path) or os.path.getsize(path) == 0:
        raise SceneError(f"{spec.engine} wrote no image for frame {want.frame}")
    ms = (time.perf_counter() - started) * 1000
    return FrameImage(path=path, frame=want.frame, engine=engine, ms=ms)
