"""``GET /api/scenes`` (the caller's scenes), ``/api/scenes/{sceneId}`` (its summary) and
its ``/history``, ``.blend`` and ``/preview.png``: reads of the executor's scene store.

Only a scene's owner reads it; another user's scene answers like a missing one (404).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query
from fastapi.responses import Response, StreamingResponse

from contracts import inspection
from contracts.scene_report import scene_report
from services.doors.core.revision_reader import RevisionReader, open_revision
from services.doors.core.scene_client import MAX_LISTED_REVISIONS, MAX_LISTED_SCENES, SceneDoor
from services.doors.gateway.auth import current_user
from services.doors.gateway.context import Gateway, gateway
from services.doors.gateway.errors import NotFound, responses
from services.doors.gateway.scene_schemas import (
    SceneHistory,
    SceneList,
    SceneSummary,
    revision_out,
    row_out,
    summary_out,
)
from services.executor.client import SceneFiles

log = logging.getLogger("blendmesh.gateway")
router = APIRouter(prefix="/api/scenes", tags=["scenes"])
User = Annotated[str, Depends(current_user)]
Gw = Annotated[Gateway, Depends(gateway)]
SceneId = Annotated[str, Path(alias="sceneId", pattern=r"^[A-Za-z0-9_-]{1,128}$")]
Revision = Annotated[int, Path(ge=1, le=2**31)]
ERRORS = responses(401, 404, 422, 503)


def _binary(media_type: str, what: str) -> dict[int | str, dict[str, Any]]:
    schema = {"type": "string", "format": "binary"}
    return {200: {"description": what, "content": {media_type: {"schema": schema}}}}


@router.get("", response_model=SceneList, responses=responses(401, 422, 503))
async def scenes(
    user: User,
    gw: Gw,
    limit: Annotated[int, Query(ge=1, le=MAX_LISTED_SCENES)] = MAX_LISTED_SCENES,
) -> SceneList:
    """The caller's scenes by id: head revision, objects, last change and by whom."""
    rows = await SceneDoor(gw.bus, gw.settings).scenes(user, limit)
    return SceneList(scenes=[row_out(row) for row in rows])


@router.get(
    "/{sceneId}.blend",
    response_class=Response,
    responses={**_binary("application/octet-stream", "The scene's head revision"), **ERRORS},
)
async def scene_blend(scene_id: SceneId, user: User, gw: Gw) -> Response:
    """The current head revision of a scene one of the caller's runs used, streamed a
    window of verified chunks at a time. A chunk found damaged once bytes are sent ends
    the transfer short of its Content-Length (a client sees a truncated body)."""
    await gw.own_scene(scene_id, user)
    files = SceneFiles(gw.bus.js, gw.prefix)
    head = await files.head(scene_id)
    if head is None:
        raise NotFound(f"scene {scene_id} has no revision yet")
    reader = await open_revision(files, head)
    return StreamingResponse(
        _sent(reader),
        media_type="application/octet-stream",
        headers={
            "Content-Disposition": f'attachment; filename="{scene_id}.blend"',
            "ETag": f'"{head.scene_hash}"',
            "Content-Length": str(reader.size),
        },
    )


async def _sent(reader: RevisionReader) -> AsyncIterator[bytes]:
    try:
        async for piece in reader.pieces():
            yield piece
    except Exception as exc:
        # The status is sent: raising makes the server drop the connection mid-body.
        log.error("download of %s stopped short: %s", reader.what, exc)
        raise


@router.get(
    "/{sceneId}/preview.png",
    response_class=Response,
    responses={**_binary("image/png", "A render after the scene's last commit"), **ERRORS},
)
async def scene_preview(scene_id: SceneId, user: User, gw: Gw) -> Response:
    """The preview rendered after the scene's last commit; 404 until there is one."""
    await gw.own_scene(scene_id, user)
    png = await SceneFiles(gw.bus.js, gw.prefix).preview(scene_id)
    if png is None:
        raise NotFound(f"scene {scene_id} has no preview yet")
    return Response(png, media_type="image/png")


@router.get(
    "/{sceneId}/revisions/{revision}/preview.png",
    response_class=Response,
    responses={**_binary("image/png", "The render of one recent revision"), **ERRORS},
)
async def revision_preview(scene_id: SceneId, revision: Revision, user: User, gw: Gw) -> Response:
    """The render of ``revision`` (one of the scene's newest), for a run's before and
    after; 404 when that revision was not rendered or is no longer kept."""
    await gw.own_scene(scene_id, user)
    png = await SceneFiles(gw.bus.js, gw.prefix).revision_preview(scene_id, revision)
    if png is None:
        raise NotFound(f"scene {scene_id} has no preview of revision {revision}")
    return Response(png, media_type="image/png")


@router.get(
    "/{sceneId}/revisions/{revision}/scene.glb",
    response_class=Response,
    responses={**_binary("model/gltf-binary", "One recent revision as binary glTF"), **ERRORS},
)
async def revision_model(scene_id: SceneId, revision: Revision, user: User, gw: Gw) -> Response:
    """``revision`` (one of the scene's newest) as binary glTF for a 3D view: its meshes
    with modifiers applied and base colours; 404 when it was not exported (not rendered,
    larger than the 3D view takes, or no longer kept)."""
    await gw.own_scene(scene_id, user)
    glb = await SceneFiles(gw.bus.js, gw.prefix).revision_model(scene_id, revision)
    if glb is None:
        raise NotFound(f"scene {scene_id} has no 3D model of revision {revision}")
    return Response(glb, media_type="model/gltf-binary")


@router.get("/{sceneId}/history", response_model=SceneHistory, responses=ERRORS)
async def scene_history(
    scene_id: SceneId,
    user: User,
    gw: Gw,
    limit: Annotated[int, Query(ge=1, le=MAX_LISTED_REVISIONS)] = MAX_LISTED_REVISIONS,
) -> SceneHistory:
    """The scene's newest revisions, oldest first, each with the run that committed it."""
    await gw.own_scene(scene_id, user)
    entries = await SceneFiles(gw.bus.js, gw.prefix).revision_log(scene_id, limit)
    return SceneHistory(scene_id=scene_id, revisions=[revision_out(e) for e in entries])


# Last: ``/{sceneId}`` would otherwise take ``x.blend`` for a scene id (and refuse it).
@router.get("/{sceneId}", response_model=SceneSummary, responses=ERRORS)
async def scene_summary(scene_id: SceneId, user: User, gw: Gw) -> SceneSummary:
    """What the head revision holds: objects, materials, lights, cameras, last change."""
    await gw.own_scene(scene_id, user)
    found = await SceneFiles(gw.bus.js, gw.prefix).revision_inspection(scene_id)
    if found is None:
        raise NotFound(f"scene {scene_id} has no inspection of its head revision yet")
    return summary_out(scene_report(inspection.decode(found[1])))
