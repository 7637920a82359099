"""``GET /api/scenes/{sceneId}/export/{format}``: the caller's scene as a GLB, FBX, OBJ,
USD or STL download.

A run of one ``scene.export`` operation built by the doors' shared
``services/doors/core/scene_looks.py``, as the CLI and the MCP tool build it: policy
decides it, the audit records it, and it makes no revision. The file is written by the
executor's Blender into its own work folder and handed back as the response body, never
to a path anyone names; its size is bounded by BLENDMESH_MAX_UPLOAD_BYTES.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Response

from contracts.exports import FORMATS, file_name
from services.doors.core.scene_client import SceneDoor
from services.doors.core.scene_looks import BadExport, SceneLooks, operation_result
from services.doors.gateway.agent import followed, settled
from services.doors.gateway.auth import current_user
from services.doors.gateway.context import Gateway, gateway
from services.doors.gateway.errors import NotFound, ValidationError, responses
from services.doors.gateway.scene_looks import refusal

router = APIRouter(prefix="/api/scenes", tags=["scenes"])
User = Annotated[str, Depends(current_user)]
Gw = Annotated[Gateway, Depends(gateway)]
SceneId = Annotated[str, Path(alias="sceneId", pattern=r"^[A-Za-z0-9_-]{1,128}$")]
Format = Literal["glb", "fbx", "obj", "usd", "stl"]  # contracts.exports.FORMATS

_FILE: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The scene as the file; X-Blendmesh-Run names the run that wrote it",
        "content": {
            media: {"schema": {"type": "string", "format": "binary"}}
            for _, media in sorted(set(FORMATS.values()))
        },
    },
    **responses(401, 404, 422, 502, 503, 504),
}


@router.get("/{sceneId}/export/{format}", response_class=Response, responses=_FILE)
async def export_scene(scene_id: SceneId, format: Format, user: User, gw: Gw) -> Response:
    """The caller's scene as ``format``: glb (binary glTF), fbx, obj, usd (binary USD) or
    stl, meshes with their modifiers applied. A read: a run of one operation, audited,
    that makes no revision. Another user's scene answers 404, as a missing one does."""
    looks = SceneLooks(SceneDoor(gw.bus, gw.settings))
    try:
        request = await looks.export_request(user, scene_id, format)
    except BadExport as exc:
        raise ValidationError(str(exc)) from None
    view = await settled(gw, followed(gw, request), request.run_id)
    result = view.result
    if result.status != "completed" or operation_result(result) is None:
        raise refusal(result)
    data = await looks.download(user, result)
    if data is None:
        raise NotFound("the exported file has expired from the store; export it again")
    name = file_name(scene_id, format)
    headers = {
        "X-Blendmesh-Run": result.run_id,
        "Content-Disposition": f'attachment; filename="{name}"',
    }
    return Response(data, media_type=FORMATS[format][1], headers=headers)
