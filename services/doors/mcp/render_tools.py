"""The MCP tools for render jobs (docs/renders.md): ask for one, read it, cancel it, and
look at one of its frames. ``render`` answers with the job at once; the frames come as
executors take them, and ``render_job`` says how far it is."""

from __future__ import annotations

from typing import Any

import mcp.types as types
import msgspec

from contracts.render_fold import RenderJob
from contracts.renders import (
    ENGINES,
    MAX_FRAME,
    MAX_SAMPLES,
    RenderRefused,
    parse_frames,
    parse_size,
    spec_of,
)
from contracts.tool_answers import output_schema
from services.doors.core.client import ClientError
from services.doors.core.renders import (
    RenderQuota,
    cancel_render,
    frame_png,
    job_of,
    request_render,
)
from services.doors.mcp import answers
from services.doors.mcp.door import Door, check
from services.doors.mcp.errors import NotFound, ValidationError
from services.doors.mcp.tools import ID_PATTERN, SCENE_ID, _schema
from services.executor.client import RenderFrames, SceneFiles

JOB_ID: dict[str, Any] = {
    "type": "string",
    "pattern": ID_PATTERN,
    "description": "a render job's id as `render` answered it, e.g. `render-1a2b...`",
}
_READ = types.ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)

RENDER = types.Tool(
    name="render",
    title="Render frames",
    description=(
        "Render frames of a committed revision of your scene across blendmesh's executors, "
        "as a job: answers the job at once; `render_job` says how far it is, `render_frame` "
        "shows a frame. Frames x samples x pixels is bounded per user."
    ),
    inputSchema=_schema(
        {
            "scene_id": SCENE_ID,
            "frames": {
                "type": "string",
                "maxLength": 40,
                "default": "1",
                "description": "FIRST-LAST, both included, e.g. `1-24`",
            },
            "engine": {"type": "string", "enum": list(ENGINES), "default": "cycles"},
            "samples": {"type": "integer", "minimum": 1, "maximum": MAX_SAMPLES, "default": 16},
            "size": {
                "type": "string",
                "maxLength": 40,
                "default": "640x360",
                "description": "WIDTHxHEIGHT in pixels",
            },
            "revision": {
                "type": "integer",
                "minimum": 1,
                "description": "the revision to render; default the newest",
            },
        },
        ["scene_id"],
    ),
    outputSchema=output_schema("render"),
    annotations=types.ToolAnnotations(
        readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False
    ),
)
RENDER_JOB = types.Tool(
    name="render_job",
    title="A render job",
    description="One of your render jobs: its status and each frame stored, by content hash.",
    inputSchema=_schema({"job_id": JOB_ID}, ["job_id"]),
    outputSchema=output_schema("render_job"),
    annotations=_READ,
)
CANCEL_RENDER = types.Tool(
    name="cancel_render",
    title="Cancel a render job",
    description="Stop one of your render jobs: frames no executor has taken are not rendered.",
    inputSchema=_schema({"job_id": JOB_ID}, ["job_id"]),
    outputSchema=output_schema("cancel_render"),
    annotations=types.ToolAnnotations(
        readOnlyHint=False, destructiveHint=False, idempotentHint=True, openWorldHint=False
    ),
)
RENDER_FRAME = types.Tool(
    name="render_frame",
    title="A rendered frame",
    description="One stored frame of one of your render jobs, as an image.",
    inputSchema=_schema(
        {"job_id": JOB_ID, "frame": {"type": "integer", "minimum": 0, "maximum": MAX_FRAME}},
        ["job_id", "frame"],
    ),
    outputSchema=output_schema("render_frame"),
    annotations=_READ,
)
TOOLS = [RENDER, RENDER_JOB, CANCEL_RENDER, RENDER_FRAME]
NAMES = frozenset(t.name for t in TOOLS)


def _job(summary: str, job: RenderJob) -> types.CallToolResult:
    return answers.result(summary, msgspec.to_builtins(job))


async def call(door: Door, user: str, name: str, args: Any) -> types.CallToolResult:
    match name:
        case "render":
            asked = check(args, RENDER.inputSchema)
            try:
                first, last = parse_frames(asked.get("frames", "1"))
                width, height = parse_size(asked.get("size", "640x360"))
                spec = spec_of(
                    first,
                    last,
                    asked.get("engine", "cycles"),
                    asked.get("samples", 16),
                    width,
                    height,
                )
            except RenderRefused as exc:
                raise ValidationError(str(exc)) from None
            request = await request_render(
                door.client,
                SceneFiles(door.bus.js, door.prefix),
                RenderQuota.from_env(door.settings.env),
                user,
                asked["scene_id"],
                asked.get("revision"),
                spec,
            )
            job = await job_of(door.client, request.run_id, user)
            return _job(f"render job {job.job_id}: {job.total} frames queued", job)
        case "render_job":
            job = await job_of(door.client, check(args, RENDER_JOB.inputSchema)["job_id"], user)
            return _job(f"render job {job.job_id}: {job.status}", job)
        case "cancel_render":
            job_id = check(args, CANCEL_RENDER.inputSchema)["job_id"]
            job = await cancel_render(door.client, job_id, user)
            return _job(f"render job {job.job_id}: {job.status}", job)
    asked = check(args, RENDER_FRAME.inputSchema)
    job = await job_of(door.client, asked["job_id"], user)
    try:
        png = await frame_png(RenderFrames(door.bus.js, door.prefix), job, asked["frame"])
    except ClientError as exc:
        raise NotFound(str(exc)) from None
    frame = next(f for f in job.frames if f.frame == asked["frame"])
    data = {"job_id": job.job_id, "frame": frame.frame, "sha256": frame.sha256, "bytes": len(png)}
    return answers.result(f"frame {frame.frame} of render job {job.job_id}", data, [png])
