"""``/api/projects`` and ``/api/scenes/{sceneId}/lock``: projects, members, roles and locks
(docs/studio.md), through the rules every door shares (services/doors/core/studio.py).

A project the caller is no member of answers 404 like one that does not exist; a member
whose role does not allow a change gets 403 naming its role; a lock another user holds is
409 naming the holder.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Path
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from contracts import subjects
from contracts.events import event_kind
from contracts.project_book import Lock, ProjectBook
from contracts.projects import (
    LOCK_TTL,
    MAX_LOCK_TTL,
    MAX_NOTE,
    LockEvent,
    Role,
    personal_project,
)
from services.doors.gateway.auth import current_user
from services.doors.gateway.context import Gateway, gateway
from services.doors.gateway.errors import NotFound, Unavailable, responses
from services.runtime.nats.direct import DirectGetError
from services.runtime.nats.history import read_subject

router = APIRouter(tags=["projects"])
User = Annotated[str, Depends(current_user)]
Gw = Annotated[Gateway, Depends(gateway)]
ProjectId = Annotated[str, Path(alias="projectId", pattern=r"^[A-Za-z0-9_-]{1,64}$")]
SceneId = Annotated[str, Path(alias="sceneId", pattern=r"^[A-Za-z0-9_-]{1,128}$")]
Member = Annotated[str, Path(pattern=r"^[^/\s]{1,128}$", description="A user name")]
ERRORS = responses(400, 401, 403, 404, 409, 422, 503)
MAX_HISTORY = 200  # lock events one answer lists
# Lock events read from the log at most: a scene locked and released every minute for a
# week; a log holding more answers 503 instead of reading without bound.
MAX_LOCK_EVENTS = 20_000


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class NewProject(_Model):
    project_id: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")


class MemberBody(_Model):
    role: Role


class LockBody(_Model):
    ttl_seconds: float = Field(default=LOCK_TTL, gt=0, le=MAX_LOCK_TTL)
    note: str = Field(default="", max_length=MAX_NOTE)
    held_by: Literal["person", "session"] = "person"


class BreakBody(_Model):
    note: str = Field(default="", max_length=MAX_NOTE)


class MemberOut(_Model):
    name: str
    role: Role


class LockOut(_Model):
    lock_id: str
    scene_id: str
    holder: str
    held_by: str
    expires_at: float
    note: str


class ProjectOut(_Model):
    project_id: str
    role: Role = Field(description="The caller's role")
    members: list[MemberOut]
    scenes: list[str]
    locks: list[LockOut] = Field(description="Locks held on the project's scenes now")


class ProjectList(_Model):
    personal: str = Field(description="The caller's personal project: its scenes in no other")
    projects: list[ProjectOut]


class SceneLock(_Model):
    scene_id: str
    lock: LockOut | None


class LockEventOut(_Model):
    type: str = Field(description="lock.taken, lock.released, lock.broken or lock.expired")
    at: float
    lock_id: str
    holder: str
    by: str | None = Field(default=None, description="Who broke the lock")
    note: str = ""


class LockHistory(_Model):
    scene_id: str
    events: list[LockEventOut] = Field(description=f"The newest {MAX_HISTORY}, oldest first")


def lock_out(lock: Lock) -> LockOut:
    return LockOut(
        lock_id=lock.lock_id,
        scene_id=lock.scene_id,
        holder=lock.holder,
        held_by=lock.held_by,
        expires_at=lock.expires_at,
        note=lock.note,
    )


def project_out(book: ProjectBook, project_id: str, user: str, now: float) -> ProjectOut:
    project = book.projects.get(project_id)
    role = book.role(project_id, user)
    if project is None or role is None:
        raise NotFound(f"no project {project_id}")
    locks = [book.lock(scene, now) for scene in sorted(project.scenes)]
    return ProjectOut(
        project_id=project_id,
        role=role,
        members=[MemberOut(name=n, role=r) for n, r in sorted(project.members.items())],
        scenes=sorted(project.scenes),
        locks=[lock_out(lock) for lock in locks if lock is not None],
    )


@router.get("/api/projects", response_model=ProjectList, responses=responses(401, 503))
async def projects(user: User, gw: Gw) -> ProjectList:
    """The projects the caller is a member of, with its role in each."""
    studio = gw.studio
    book = await studio.book.current()
    now = studio.clock()
    shown = [project_out(book, p.project_id, user, now) for p in book.visible(user)]
    return ProjectList(personal=personal_project(user), projects=shown)


@router.post("/api/projects", response_model=ProjectOut, status_code=201, responses=ERRORS)
async def create(body: NewProject, user: User, gw: Gw) -> ProjectOut:
    """A new project with the caller as its lead."""
    studio = gw.studio
    book = await studio.create(body.project_id, user)
    return project_out(book, body.project_id, user, studio.clock())


@router.get("/api/projects/{projectId}", response_model=ProjectOut, responses=ERRORS)
async def show(project_id: ProjectId, user: User, gw: Gw) -> ProjectOut:
    """The project's members, scenes and locks; 404 unless the caller is a member."""
    studio = gw.studio
    return project_out(await studio.book.current(), project_id, user, studio.clock())


@router.put(
    "/api/projects/{projectId}/members/{member}", response_model=ProjectOut, responses=ERRORS
)
async def add_member(
    project_id: ProjectId, member: Member, body: MemberBody, user: User, gw: Gw
) -> ProjectOut:
    """Add ``member`` with ``role``, or change its role; a lead's (or supervisor's) to do."""
    studio = gw.studio
    book = await studio.add_member(project_id, member, body.role, user)
    return project_out(book, project_id, user, studio.clock())


@router.delete(
    "/api/projects/{projectId}/members/{member}", response_model=ProjectOut, responses=ERRORS
)
async def remove_member(project_id: ProjectId, member: Member, user: User, gw: Gw) -> ProjectOut:
    """Remove ``member`` (a lead's to do, or the member's own leaving)."""
    studio = gw.studio
    book = await studio.remove_member(project_id, member, user)
    if book.role(project_id, user) is None:  # the caller left: nothing of it to show
        raise NotFound(f"you left project {project_id}")
    return project_out(book, project_id, user, studio.clock())


@router.put(
    "/api/projects/{projectId}/scenes/{sceneId}", response_model=ProjectOut, responses=ERRORS
)
async def file_scene(project_id: ProjectId, scene_id: SceneId, user: User, gw: Gw) -> ProjectOut:
    """File a scene of the caller's own in the project: its members reach it by role."""
    studio = gw.studio
    book = await studio.file_scene(project_id, scene_id, user)
    return project_out(book, project_id, user, studio.clock())


@router.get("/api/scenes/{sceneId}/lock", response_model=SceneLock, responses=ERRORS)
async def scene_lock(scene_id: SceneId, user: User, gw: Gw) -> SceneLock:
    """Who holds the scene's lock, if anyone."""
    studio = gw.studio
    book, _, _ = await studio.scene_role(scene_id, user)
    held = book.lock(scene_id, studio.clock())
    return SceneLock(scene_id=scene_id, lock=lock_out(held) if held else None)


@router.post("/api/scenes/{sceneId}/lock", response_model=SceneLock, responses=ERRORS)
async def take_lock(scene_id: SceneId, body: LockBody, user: User, gw: Gw) -> SceneLock:
    """Lock the scene for the caller: other users' runs on it are refused until it is
    released, broken or expires."""
    held = await gw.studio.lock(scene_id, user, body.ttl_seconds, body.note, body.held_by)
    return SceneLock(scene_id=scene_id, lock=lock_out(held))


@router.delete("/api/scenes/{sceneId}/lock", response_model=SceneLock, responses=ERRORS)
async def release_lock(scene_id: SceneId, user: User, gw: Gw) -> SceneLock:
    """Release the caller's own lock."""
    await gw.studio.unlock(scene_id, user)
    return SceneLock(scene_id=scene_id, lock=None)


@router.post("/api/scenes/{sceneId}/lock/break", response_model=SceneLock, responses=ERRORS)
async def break_lock(scene_id: SceneId, body: BreakBody, user: User, gw: Gw) -> SceneLock:
    """Take another user's lock away: a lead's (or supervisor's) to do, recorded in the log."""
    await gw.studio.break_lock(scene_id, user, body.note)
    return SceneLock(scene_id=scene_id, lock=None)


@router.get("/api/scenes/{sceneId}/lock/history", response_model=LockHistory, responses=ERRORS)
async def lock_history(scene_id: SceneId, user: User, gw: Gw) -> LockHistory:
    """Every take, release, break and expiry of the scene's locks, as the log holds them:
    who broke whose lock, when and why."""
    await gw.studio.scene_role(scene_id, user)
    subject = subjects.lock_events(gw.prefix, scene_id)
    try:
        events = await read_subject(gw.bus.js, gw.prefix, subject, limit=MAX_LOCK_EVENTS)
    except DirectGetError as exc:
        raise Unavailable(f"the log did not give the scene's lock history: {exc}") from None
    shown = [
        LockEventOut(
            type=event_kind(e),
            at=e.at,
            lock_id=e.lock_id,
            holder=e.holder,
            by=getattr(e, "by", None),
            note=getattr(e, "note", ""),
        )
        for e in events
        if isinstance(e, LockEvent)
    ]
    return LockHistory(scene_id=scene_id, events=shown[-MAX_HISTORY:])
