"""``/api/scenes/{sceneId}/tags``: revisions a user keeps past retention (docs/storage.md).

A tag names one revision of the caller's own scene; retention never collects a tagged
revision. Tagging a name again moves it. Another user's scene answers 404, like the reads.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from services.doors.gateway.auth import current_user
from services.doors.gateway.context import Gateway, gateway
from services.doors.gateway.errors import NotFound, responses
from services.doors.gateway.scene_schemas import MAX_REVISION
from services.executor.client import KvSceneTags, SceneFiles

router = APIRouter(prefix="/api/scenes", tags=["scenes"])
User = Annotated[str, Depends(current_user)]
Gw = Annotated[Gateway, Depends(gateway)]
TOKEN = r"^[A-Za-z0-9_-]{1,128}$"
SceneId = Annotated[str, Path(alias="sceneId", pattern=TOKEN)]
TagName = Annotated[str, Path(pattern=TOKEN, description="Letters, digits, '_' or '-'")]
ERRORS = responses(401, 404, 422, 503)


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class TagBody(_Model):
    revision: int | None = Field(
        ge=1, le=MAX_REVISION, description="The revision the tag keeps; null removes the tag"
    )


class RevisionTag(_Model):
    name: str
    revision: int | None = Field(description="The revision kept; null once the tag is removed")


class SceneTags(_Model):
    scene_id: str
    tags: list[RevisionTag] = Field(description="By name")


@router.get("/{sceneId}/tags", response_model=SceneTags, responses=ERRORS)
async def scene_tags(scene_id: SceneId, user: User, gw: Gw) -> SceneTags:
    """The scene's tags and the revisions they keep."""
    await gw.own_scene(scene_id, user)
    found = await KvSceneTags(gw.bus.js, gw.prefix).of(scene_id)
    tags = [RevisionTag(name=n, revision=r) for n, r in sorted(found.items())]
    return SceneTags(scene_id=scene_id, tags=tags)


# One route for setting and removing: a second method on the same path would answer a
# third with a 405 whose Allow header names only the first.
# A body that is not JSON at all is a 400, as on every route that takes one (errors.py).
@router.put(
    "/{sceneId}/tags/{name}",
    response_model=RevisionTag,
    responses=responses(400, 401, 404, 422, 503),
)
async def tag_revision(
    scene_id: SceneId, name: TagName, body: TagBody, user: User, gw: Gw
) -> RevisionTag:
    """Keep ``revision`` past retention under ``name``; 404 when the scene has no such
    revision (any more). ``revision: null`` removes the tag (404 when there is none)."""
    await gw.own_scene(scene_id, user)
    tags = KvSceneTags(gw.bus.js, gw.prefix)
    if body.revision is None:
        if not await tags.untag(scene_id, name):
            raise NotFound(f"scene {scene_id} has no tag {name}; GET its /tags lists them")
        return RevisionTag(name=name, revision=None)
    known = {n for n, _ in await SceneFiles(gw.bus.js, gw.prefix).history(scene_id)}
    if body.revision not in known:
        raise NotFound(
            f"scene {scene_id} has no revision {body.revision}; "
            f"GET /api/scenes/{scene_id}/history lists them"
        )
    await tags.tag(scene_id, body.revision, name, user)
    return RevisionTag(name=name, revision=body.revision)
