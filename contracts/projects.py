"""Projects, their members and roles, and scene locks: the facts a studio's work rests on.

A project holds scenes; a user is a member of it with one role (docs/adr/0058). A scene
filed in no project is its owner's personal project, ``user:<owner>``: the ':' never
occurs in a shared project's id (a subject token), so the two can never collide, and a
personal project needs no event at all. A lock keeps a scene for one person or one live
session for a bounded time (docs/adr/0059).

Every fact is an event in the log: ``<prefix>.project.<project_id>.<kind>`` and
``<prefix>.lock.<scene token>.<kind>``, published only by the doors (the ``client`` and
``door`` NATS roles), which check who asks before they publish.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from contracts.event_base import Event

Role = Literal["viewer", "artist", "lead", "supervisor"]
ROLES: tuple[Role, ...] = ("viewer", "artist", "lead", "supervisor")
PERSONAL = "user:"  # a personal project's id is this and its owner's name

MAX_MEMBERS = 500  # members of one project
MAX_SCENES = 10_000  # scenes filed in one project
MAX_PROJECTS = 1_000  # projects in one mesh, so the book every door folds stays small
LOCK_TTL = 3600.0  # seconds a lock lasts when its taker names no time
MAX_LOCK_TTL = 24 * 3600.0  # no lock outlives a day: a forgotten one frees itself
MAX_NOTE = 200  # characters of a lock's note

ProjectId = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
UserName = Annotated[str, msgspec.Meta(min_length=1, max_length=128)]
SceneId = Annotated[str, msgspec.Meta(min_length=1, max_length=256)]
Note = Annotated[str, msgspec.Meta(max_length=MAX_NOTE)]
Holder = Literal["person", "session"]


def personal_project(user: str) -> str:
    """The id of ``user``'s personal project: where a scene filed nowhere else belongs."""
    return PERSONAL + user


def personal_owner(project_id: str) -> str | None:
    """The owner a personal project's id names; None for a shared project."""
    return project_id.removeprefix(PERSONAL) if project_id.startswith(PERSONAL) else None


class ProjectCreated(Event, frozen=True, kw_only=True, tag="project.created"):
    """A shared project begins; whoever created it is its first lead."""

    project_id: ProjectId
    by: UserName


class MemberAdded(Event, frozen=True, kw_only=True, tag="project.member_added"):
    """``member`` joins the project, or takes ``role`` instead of the role it had."""

    project_id: ProjectId
    member: UserName
    role: Role
    by: UserName


class MemberRemoved(Event, frozen=True, kw_only=True, tag="project.member_removed"):
    """``member`` leaves the project: from now on its scenes answer it as unknown."""

    project_id: ProjectId
    member: UserName
    by: UserName


class SceneFiled(Event, frozen=True, kw_only=True, tag="project.scene_filed"):
    """The scene's owner files it in the project: its members reach it by their roles."""

    project_id: ProjectId
    scene_id: SceneId
    by: UserName


class LockTaken(Event, frozen=True, kw_only=True, tag="lock.taken"):
    """``holder`` keeps the scene until ``expires_at``: other users' runs are refused."""

    lock_id: str
    scene_id: SceneId
    holder: UserName
    held_by: Holder = "person"  # a person at a door, or a live session of the add-on
    expires_at: float
    note: Note = ""


class LockReleased(Event, frozen=True, kw_only=True, tag="lock.released"):
    """The holder let the scene go."""

    lock_id: str
    scene_id: SceneId
    holder: UserName


class LockBroken(Event, frozen=True, kw_only=True, tag="lock.broken"):
    """A lead (or supervisor) of the scene's project took the lock away from its holder."""

    lock_id: str
    scene_id: SceneId
    holder: UserName
    by: UserName
    note: Note = ""


class LockExpired(Event, frozen=True, kw_only=True, tag="lock.expired"):
    """The lock's time ran out; recorded by the first door that noticed it."""

    lock_id: str
    scene_id: SceneId
    holder: UserName


ProjectEvent = ProjectCreated | MemberAdded | MemberRemoved | SceneFiled
LockEvent = LockTaken | LockReleased | LockBroken | LockExpired
StudioEvent = ProjectEvent | LockEvent
