"""``GET /api/scenes/{sceneId}/changes``: what a revision changed, with its reviews; and
``POST /api/scenes/{sceneId}/revisions/{revision}/review``: a review recorded on it.

The scene's owner and the registry's approvers read and review (``core/reviews.py``);
anyone else's request answers 404, like a scene that does not exist.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query

from services.doors.core.reviews import MAX_REVISION, Revisions, registry_approvers
from services.doors.gateway.auth import current_user
from services.doors.gateway.change_schemas import (
    ChangeListOut,
    ReviewBody,
    ReviewRecorded,
    changes_out,
    review_out,
)
from services.doors.gateway.context import Gateway, gateway
from services.doors.gateway.errors import responses

router = APIRouter(prefix="/api/scenes", tags=["scenes"])
User = Annotated[str, Depends(current_user)]
Gw = Annotated[Gateway, Depends(gateway)]
SceneId = Annotated[str, Path(alias="sceneId", pattern=r"^[A-Za-z0-9_-]{1,128}$")]


def _revisions(gw: Gateway) -> Revisions:
    return Revisions.of(gw.bus, registry_approvers(gw.settings))


@router.get(
    "/{sceneId}/changes", response_model=ChangeListOut, responses=responses(401, 404, 422, 503)
)
async def scene_changes(
    scene_id: SceneId,
    user: User,
    gw: Gw,
    base: Annotated[
        int | None, Query(ge=1, lt=MAX_REVISION, description="Default: the revision before")
    ] = None,
    revision: Annotated[
        int | None, Query(ge=1, lt=MAX_REVISION, description="Default: the head")
    ] = None,
) -> ChangeListOut:
    """What ``revision`` changed against ``base``: objects, mesh and curve data, materials,
    modifiers and node groups added, removed or changed, with values before and after."""
    listed = await _revisions(gw).changes(scene_id, user, base, revision)
    return changes_out(listed)


@router.post(
    "/{sceneId}/revisions/{revision}/review",
    response_model=ReviewRecorded,
    responses=responses(400, 401, 404, 422, 503),
)
async def review_revision(
    scene_id: SceneId,
    revision: Annotated[int, Path(ge=1, lt=MAX_REVISION)],
    body: ReviewBody,
    user: User,
    gw: Gw,
) -> ReviewRecorded:
    """Approve the revision, or request changes to it, with a note; recorded in the log."""
    event = await _revisions(gw).review(scene_id, user, revision, body.verdict, body.note)
    return review_out(event)
