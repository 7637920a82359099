"""``GET /api/scenes/{sceneId}/libraries/{name}@{revision}.blend``: a library revision a
scene links (ADR 0060), so a client that downloaded a shot (``/api/scenes/{sceneId}.blend``)
fetches each file its links name into ``libraries/`` beside it, as ``blendmesh scenes
download`` does. Only the libraries of the scene's own project: another user's scene
answers like a missing one, and a revision its project lacks is 404.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path as FilePath
from typing import Annotated

from fastapi import APIRouter, Depends, Path
from fastapi.responses import FileResponse
from starlette.background import BackgroundTask

from contracts.libraries import MAX_REVISION, NAME_PATTERN, project_of
from services.doors.gateway.auth import current_user
from services.doors.gateway.context import Gateway, gateway
from services.doors.gateway.errors import NotFound, responses
from services.executor.client import LibraryFiles, SceneFiles

router = APIRouter(prefix="/api/scenes", tags=["scenes"])
User = Annotated[str, Depends(current_user)]
Gw = Annotated[Gateway, Depends(gateway)]
SceneId = Annotated[str, Path(alias="sceneId", pattern=r"^[A-Za-z0-9_-]{1,128}$")]
Name = Annotated[str, Path(pattern=f"^{NAME_PATTERN}$")]
Revision = Annotated[int, Path(ge=1, le=MAX_REVISION)]
BINARY = {"schema": {"type": "string", "format": "binary"}}
SENT = {
    "description": "The library revision, as it was published",
    "content": {"application/octet-stream": BINARY},
}


@router.get(
    "/{sceneId}/libraries/{name}@{revision}.blend",
    response_class=FileResponse,
    responses={200: SENT, **responses(401, 404, 422, 503)},
)
async def library_blend(
    scene_id: SceneId, name: Name, revision: Revision, user: User, gw: Gw
) -> FileResponse:
    """Revision ``revision`` of library ``name`` of the scene's project, read-only."""
    await gw.own_scene(scene_id, user)
    head = await SceneFiles(gw.bus.js, gw.prefix).head(scene_id)
    owner = (head.owner if head is not None else "") or user
    folder = await asyncio.to_thread(_scratch, gw.settings.work_dir)
    dest = folder / f"{name}@{revision}.blend"
    try:
        found = await LibraryFiles(gw.bus.js, gw.prefix).fetch(
            project_of(owner), name, revision, dest
        )
    except BaseException:
        await asyncio.to_thread(shutil.rmtree, folder, True)
        raise
    if not found:
        await asyncio.to_thread(shutil.rmtree, folder, True)
        raise NotFound(
            f"scene {scene_id}'s project has no revision {revision} of library {name}; "
            "the links of the scene's .blend name the ones it uses"
        )
    return FileResponse(
        dest,
        media_type="application/octet-stream",
        filename=dest.name,
        background=BackgroundTask(shutil.rmtree, folder, ignore_errors=True),
    )


def _scratch(work_dir: FilePath) -> FilePath:
    """A private folder for one library sent: removed once it has gone out."""
    where = work_dir / "libraries-sent"
    where.mkdir(parents=True, exist_ok=True)
    return FilePath(tempfile.mkdtemp(prefix="library-", dir=where))
