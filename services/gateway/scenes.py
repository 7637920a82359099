"""``GET /api/scenes/{sceneId}.blend`` and ``/preview.png``: bytes from the object store."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path
from fastapi.responses import Response

from services.executor.client import SceneFiles
from services.gateway.auth import current_user
from services.gateway.context import Gateway, gateway
from services.gateway.errors import NotFound, responses

router = APIRouter(prefix="/api/scenes", tags=["scenes"])
User = Annotated[str, Depends(current_user)]
Gw = Annotated[Gateway, Depends(gateway)]
SceneId = Annotated[str, Path(alias="sceneId", pattern=r"^[A-Za-z0-9_-]{1,128}$")]
ERRORS = responses(401, 404, 422, 503)


def _binary(media_type: str, what: str) -> dict[int | str, dict[str, Any]]:
    schema = {"type": "string", "format": "binary"}
    return {200: {"description": what, "content": {media_type: {"schema": schema}}}}


@router.get(
    "/{sceneId}.blend",
    response_class=Response,
    responses={**_binary("application/octet-stream", "The scene's head revision"), **ERRORS},
)
async def scene_blend(scene_id: SceneId, user: User, gw: Gw) -> Response:
    """The current head revision of a scene one of the caller's runs used."""
    await gw.own_scene(scene_id, user)
    files = SceneFiles(gw.bus.js, gw.prefix)
    head = await files.head(scene_id)
    if head is None:
        raise NotFound(f"scene {scene_id} has no revision yet")
    data = await files.blend(head)
    return Response(
        data,
        media_type="application/octet-stream",
        headers={
            "Content-Disposition": f'attachment; filename="{scene_id}.blend"',
            "ETag": f'"{head.scene_hash}"',
        },
    )


@router.get(
    "/{sceneId}/preview.png",
    response_class=Response,
    responses={**_binary("image/png", "A small render after the scene's last commit"), **ERRORS},
)
async def scene_preview(scene_id: SceneId, user: User, gw: Gw) -> Response:
    """The preview rendered after the scene's last commit; 404 until there is one."""
    await gw.own_scene(scene_id, user)
    png = await SceneFiles(gw.bus.js, gw.prefix).preview(scene_id)
    if png is None:
        raise NotFound(f"scene {scene_id} has no preview yet")
    return Response(png, media_type="image/png")
