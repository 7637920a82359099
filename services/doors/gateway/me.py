"""``GET /api/me``: who the caller's token says they are.

The gateway knows a person only by the token they send (``BLENDMESH_API_TOKENS``); the
CLI knows them by ``BLENDMESH_USER``. Scenes, runs and approvals belong to a user name, so
the console shows both names: when they differ, the console's user sees none of what the
CLI's user made (docs/running.md, "The console's user and the CLI's").
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from services.doors.gateway.auth import current_user
from services.doors.gateway.context import Gateway, gateway
from services.doors.gateway.errors import responses

router = APIRouter(prefix="/api/me", tags=["me"])
User = Annotated[str, Depends(current_user)]
Gw = Annotated[Gateway, Depends(gateway)]


class Me(BaseModel):
    """``user`` owns what this token does; ``meshUser`` is the BLENDMESH_USER the mesh
    (and so a CLI run on its machine by default) records runs for; ``maxUploadBytes`` is
    the largest body the gateway takes (BLENDMESH_MAX_UPLOAD_BYTES), so a client can say
    a file is too large before it sends it."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    user: str
    mesh_user: str
    max_upload_bytes: int


@router.get("", response_model=Me, responses=responses(401))
async def me(user: User, gw: Gw) -> Me:
    """The user the bearer token maps to, and the mesh's own user."""
    return Me(user=user, mesh_user=gw.settings.user, max_upload_bytes=gw.settings.max_upload_bytes)
