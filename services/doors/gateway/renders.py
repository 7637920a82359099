"""Render jobs over HTTP (docs/renders.md, docs/http-api.md).

``POST /api/scenes/{sceneId}/renders`` asks for a job and answers at once (202) with it;
``GET /api/renders/{jobId}`` reads it, ``POST /api/renders/{jobId}/cancel`` stops it and
``GET /api/renders/{jobId}/frames/{frame}`` hands out one frame's PNG. Every route is
the caller's alone: another user's scene or job answers 404, like an unknown one.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from contracts.render_fold import RenderJob
from contracts.renders import MAX_FRAME, parse_frames, parse_size, spec_of
from services.doors.core.client import ClientError
from services.doors.core.ownership import NotOwned
from services.doors.core.renders import (
    RenderQuota,
    cancel_render,
    frame_png,
    job_of,
    request_render,
)
from services.doors.gateway.auth import current_user
from services.doors.gateway.context import Gateway, gateway
from services.doors.gateway.errors import Conflict, NotFound, ValidationError, responses
from services.doors.gateway.scene_schemas import MAX_REVISION
from services.executor.client import RenderFrames, SceneFiles

router = APIRouter(tags=["renders"])
User = Annotated[str, Depends(current_user)]
Gw = Annotated[Gateway, Depends(gateway)]
TOKEN = r"^[A-Za-z0-9_-]{1,128}$"
SceneId = Annotated[str, Path(alias="sceneId", pattern=TOKEN)]
JobId = Annotated[str, Path(alias="jobId", pattern=TOKEN)]
Frame = Annotated[int, Path(ge=0, le=MAX_FRAME)]


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class RenderBody(_Model):
    frames: str = Field(default="1", max_length=40, description="FIRST-LAST, both included")
    engine: str = Field(default="cycles", max_length=40, description="cycles, eevee, workbench")
    samples: int = Field(default=16, description="Samples per pixel, 1 to 4096")
    size: str = Field(default="640x360", max_length=40, description="WIDTHxHEIGHT in pixels")
    revision: int | None = Field(
        default=None, ge=1, le=MAX_REVISION, description="Default: the newest"
    )


class StoredFrame(_Model):
    frame: int
    sha256: str
    size: int = Field(description="Bytes of the PNG")
    ms: float = Field(description="Blender's render time")
    executor: str


class RenderJobResponse(_Model):
    job_id: str
    status: str = Field(description="queued, rendering, completed, cancelled or failed")
    scene_id: str
    revision: int
    first: int
    last: int
    engine: str
    samples: int
    width: int
    height: int
    cost: int = Field(description="Frames x samples x pixels")
    total: int
    frames: list[StoredFrame]
    message: str = ""


def _answer(job: RenderJob) -> RenderJobResponse:
    spec = job.spec
    return RenderJobResponse(
        job_id=job.job_id,
        status=job.status,
        scene_id=job.scene_id,
        revision=job.revision,
        first=spec.first,
        last=spec.last,
        engine=spec.engine,
        samples=spec.samples,
        width=spec.width,
        height=spec.height,
        cost=job.cost,
        total=job.total,
        frames=[
            StoredFrame(frame=f.frame, sha256=f.sha256, size=f.size, ms=f.ms, executor=f.executor)
            for f in job.frames
        ],
        message=job.message,
    )


@router.post(
    "/api/scenes/{sceneId}/renders",
    response_model=RenderJobResponse,
    status_code=202,
    responses=responses(400, 401, 403, 404, 413, 422, 503),
)
async def render(scene_id: SceneId, body: RenderBody, user: User, gw: Gw) -> RenderJobResponse:
    """Render frames of a committed revision of the caller's scene across the executors.
    A job over the caller's render budget is 403, naming it; a bad range, size, sample
    count or engine is 422, naming what would do."""
    first, last = parse_frames(body.frames)
    width, height = parse_size(body.size)
    spec = spec_of(first, last, body.engine, body.samples, width, height)
    files = SceneFiles(gw.bus.js, gw.prefix)
    quota = RenderQuota.from_env(gw.settings.env)
    try:
        asked = await request_render(gw.client, files, quota, user, scene_id, body.revision, spec)
    except NotOwned:
        raise
    except ClientError as exc:
        if type(exc) is ClientError:  # a revision the scene has not
            raise ValidationError(str(exc)) from None
        raise
    return _answer(await job_of(gw.client, asked.run_id, user))


@router.get("/api/renders/{jobId}", response_model=RenderJobResponse, responses=responses(401, 404))
async def show(job_id: JobId, user: User, gw: Gw) -> RenderJobResponse:
    """The job: its status and each frame stored, by content hash."""
    return _answer(await job_of(gw.client, job_id, user))


@router.post(
    "/api/renders/{jobId}/cancel",
    response_model=RenderJobResponse,
    responses=responses(400, 401, 404, 409, 413, 422),
)
async def cancel(job_id: JobId, user: User, gw: Gw) -> RenderJobResponse:
    """Stop the job: frames no executor has taken are not rendered. A job that ended is 409."""
    try:
        return _answer(await cancel_render(gw.client, job_id, user))
    except NotOwned:
        raise
    except ClientError as exc:
        raise Conflict(str(exc)) from None


@router.get(
    "/api/renders/{jobId}/frames/{frame}",
    response_class=Response,
    responses={200: {"content": {"image/png": {}}}, **responses(401, 404, 422)},
)
async def frame(job_id: JobId, frame: Frame, user: User, gw: Gw) -> Response:
    """One frame's PNG."""
    job = await job_of(gw.client, job_id, user)
    try:
        png = await frame_png(RenderFrames(gw.bus.js, gw.prefix), job, frame)
    except ClientError as exc:
        raise NotFound(str(exc)) from None
    return Response(png, media_type="image/png", headers={"Cache-Control": "private"})
