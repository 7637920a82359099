"""``POST /api/scenes/{sceneId}/import`` and ``/revert``: runs that replace a whole scene.

Both are runs like any other (``contracts/scene_files.py``), built by the scene door the
CLI uses too; both are destructive, so they wait for a person's approval: the answer is
202 with the run and its pending approval, resolved by ``/api/agent/approvals/resolve``.
The import's body is the .blend itself, streamed in up to BLENDMESH_MAX_UPLOAD_BYTES
(``upload_limit``: the one route exempt from the 1 MiB body limit) and written to a
temporary file as it arrives (``received``), which is staged from there.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request, Response

from contracts.events import RunRequested
from contracts.libraries import MAX_LIBRARIES, is_name
from contracts.scene_files import is_blob_id
from services.doors.core.scene_client import HEAD_BYTES, SceneDoor, check_head
from services.doors.gateway import received
from services.doors.gateway.agent import followed, settled
from services.doors.gateway.auth import current_user
from services.doors.gateway.context import Gateway, gateway
from services.doors.gateway.errors import ValidationError, responses
from services.doors.gateway.limits import Streamed
from services.doors.gateway.scene_schemas import RevertBody, SceneRun
from services.doors.gateway.schemas import pending_out, run_response
from services.executor.client import SceneFiles
from services.runtime.service.settings import Settings

router = APIRouter(prefix="/api/scenes", tags=["scenes"])
User = Annotated[str, Depends(current_user)]
Gw = Annotated[Gateway, Depends(gateway)]
SceneId = Annotated[str, Path(alias="sceneId", pattern=r"^[A-Za-z0-9_-]{1,128}$")]
Libraries = Annotated[
    list[str] | None,
    Query(description="a library the shot brings: <name>=<blob of POST /api/uploads>"),
]
IMPORT_PATH = re.compile(r"/api/scenes/[A-Za-z0-9_-]{1,128}/import")
UPLOAD_NAME = "the uploaded file"

ANSWERS: dict[int | str, dict[str, Any]] = {
    200: {"model": SceneRun, "description": "The run completed or failed without waiting"},
    202: {"model": SceneRun, "description": "The run waits for the approval it names"},
}
IMPORT_BODY = {
    "required": True,
    "description": "The .blend file as Blender saved it (compressed or not)",
    "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
}


def upload_limit(settings: Settings) -> Streamed:
    """The import route's exemption from the body limit, with a limit of its own."""
    return Streamed(
        method="POST",
        path=IMPORT_PATH,
        max_bytes=settings.max_upload_bytes,
        setting="BLENDMESH_MAX_UPLOAD_BYTES",
        what="the .blend to import",
    )


async def follow(gw: Gateway, request: RunRequested, response: Response) -> SceneRun:
    """Submit ``request`` and answer once it waits for approval (202) or ended (200)."""
    view = await settled(gw, followed(gw, request), request.run_id)
    if view.status != "awaiting_confirmation":
        response.status_code = 200
        return SceneRun(run=run_response(view), approval=None)
    waiting = view.pending
    return SceneRun(
        run=run_response(view), approval=pending_out(waiting) if waiting is not None else None
    )


@router.post(
    "/{sceneId}/import",
    status_code=202,
    response_model=SceneRun,
    responses={**ANSWERS, **responses(401, 404, 413, 422, 503, 504)},
    openapi_extra={"requestBody": IMPORT_BODY},
)
async def import_scene(
    scene_id: SceneId,
    request: Request,
    response: Response,
    user: User,
    gw: Gw,
    library: Libraries = None,
) -> SceneRun:
    """Make an uploaded .blend the scene's next revision (a new scene id makes a new
    scene, the caller's); the run waits for approval. Scripts in the file never run.
    A shot linking ``//libraries/<name>.blend`` names each library it brings as
    ``library=<name>=<blob>``, the blob ``POST /api/uploads`` answered for its file."""
    staged = _libraries(library or [])
    files = SceneFiles(gw.bus.js, gw.prefix)
    if await files.head(scene_id) is not None:
        await gw.own_scene(scene_id, user)  # before reading a byte of someone else's import
    # Bounded while it arrives (upload_limit), written to a file as it does: memory holds
    # a buffer of it, never the .blend.
    where = received.folder(gw.settings)
    async with received.received(request.stream(), where, _check_head, HEAD_BYTES) as got:
        built = await SceneDoor(gw.bus, gw.settings).import_request(
            user, scene_id, got.file, UPLOAD_NAME, sha256=got.sha256, staged_libraries=staged
        )
    return await follow(gw, built, response)


def _libraries(named: list[str]) -> dict[str, str]:
    """``<name>=<blob>`` query values as a map; a ValidationError naming a bad one."""
    if len(named) > MAX_LIBRARIES:
        raise ValidationError(f"an import brings at most {MAX_LIBRARIES} libraries")
    found: dict[str, str] = {}
    for value in named:
        name, _, blob = value.partition("=")
        if not is_name(name) or not is_blob_id(blob) or name in found:
            raise ValidationError(
                f"library {value[:80]!r} is not <name>=sha256:<64 hex digits> (a name of "
                "lower-case letters, digits, '_' or '-', each once)"
            )
        found[name] = blob
    return found


def _check_head(head: bytes) -> None:
    check_head(head, UPLOAD_NAME)


@router.post(
    "/{sceneId}/revert",
    status_code=202,
    response_model=SceneRun,
    responses={**ANSWERS, **responses(400, 401, 404, 413, 422, 503, 504)},
)
async def revert_scene(
    scene_id: SceneId, body: RevertBody, response: Response, user: User, gw: Gw
) -> SceneRun:
    """Make a new revision equal to ``revision`` (the ones between are kept); the run
    waits for approval."""
    await gw.own_scene(scene_id, user)
    files = SceneFiles(gw.bus.js, gw.prefix)
    known = {n for n, _ in await files.history(scene_id)}
    if body.revision not in known:
        head = await files.head(scene_id)
        raise ValidationError(
            f"scene {scene_id} has no revision {body.revision} (its head is revision "
            f"{head.revision if head else 0}); GET /api/scenes/{scene_id}/history lists them"
        )
    built = await SceneDoor(gw.bus, gw.settings).revert_request(user, scene_id, body.revision)
    return await follow(gw, built, response)
