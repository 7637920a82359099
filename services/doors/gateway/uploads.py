"""``POST /api/uploads``: a file staged for the caller, to be named by a door whose own
messages are too small to carry it.

An MCP request over ``/mcp`` is a JSON body held to BLENDMESH_MAX_BODY_BYTES (1 MiB by
default), so a 20 MB asset cannot ride in an ``import_asset`` call: the host stages it
here and the call names the blob this answers. The body is the file itself, streamed in
up to BLENDMESH_MAX_UPLOAD_BYTES (``upload_limit``) like an import's; the upload is the
caller's alone (another user naming its blob finds nothing) and kept a day.
"""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field

from services.doors.core.scene_client import SceneDoor
from services.doors.core.scene_looks import SceneLooks
from services.doors.gateway.auth import current_user
from services.doors.gateway.context import Gateway, gateway
from services.doors.gateway.errors import ValidationError, responses
from services.doors.gateway.limits import Streamed
from services.runtime.nats.access import store_ttl
from services.runtime.service.settings import Settings

router = APIRouter(prefix="/api/uploads", tags=["uploads"])
User = Annotated[str, Depends(current_user)]
Gw = Annotated[Gateway, Depends(gateway)]
UPLOAD_PATH = re.compile(r"/api/uploads")
UPLOAD_TTL = int(store_ttl("uploads") or 0)  # the store keeps an upload this long


class Upload(BaseModel):
    """A staged file: ``blob`` is what a tool argument names (``import_asset``'s ``upload``)."""

    model_config = ConfigDict(extra="forbid")
    blob: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    bytes: int
    expires_in: int = Field(description="seconds the upload is kept, used or not")


def upload_limit(settings: Settings) -> Streamed:
    """The upload route's exemption from the body limit, with the upload limit instead."""
    return Streamed(
        method="POST",
        path=UPLOAD_PATH,
        max_bytes=settings.max_upload_bytes,
        setting="BLENDMESH_MAX_UPLOAD_BYTES",
        what="the file to stage",
    )


@router.post(
    "",
    status_code=201,
    response_model=Upload,
    responses=responses(400, 401, 413, 422, 503),
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": "The file's bytes (any file a tool takes, e.g. a .glb asset)",
            "content": {
                "application/octet-stream": {
                    "schema": {"type": "string", "format": "binary", "minLength": 1}
                }
            },
        }
    },
)
async def stage(request: Request, user: User, gw: Gw) -> Upload:
    """Stage the body for the caller; name the answered ``blob`` in a tool call."""
    data = bytearray()
    async for chunk in request.stream():  # bounded while it arrives: upload_limit
        data += chunk
    if not data:
        raise ValidationError("the body is empty; send the file's bytes")
    blob = await SceneLooks(SceneDoor(gw.bus, gw.settings)).stage(user, bytes(data))
    return Upload(blob=blob, bytes=len(data), expires_in=UPLOAD_TTL)
