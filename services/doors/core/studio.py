"""Projects, members and locks as every door offers them: one set of rules, one writer.

A door asks ``Studio`` on behalf of the user it authenticated. Whatever the user is not
a member of answers exactly like something unknown (``NotOwned``), so project and scene
ids cannot be probed; a member who may see a thing but not do this to it is told its
role and who may (``Forbidden``). Each change is one event in the log, and the answer is
read back from the book the log folds into, so a change the book refused (a race with
another lead, a lock someone else took first) is reported as refused, never as done.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from contracts import subjects
from contracts.events import Event
from contracts.project_book import Lock, ProjectBook, may_manage, may_run
from contracts.projects import (
    LOCK_TTL,
    MAX_LOCK_TTL,
    MAX_MEMBERS,
    MAX_NOTE,
    MAX_SCENES,
    ROLES,
    Holder,
    LockBroken,
    LockExpired,
    LockReleased,
    LockTaken,
    MemberAdded,
    MemberRemoved,
    ProjectCreated,
    Role,
    SceneFiled,
)
from contracts.scenes import Head
from services.doors.core.client import ClientError
from services.doors.core.ownership import Book, NotOwned


class Forbidden(ClientError):
    """The user reaches the thing, but its role does not allow this."""


class SceneLocked(ClientError):
    """Another user holds the scene's lock; the message names the holder and when it ends."""


class ProjectExists(ClientError):
    """A project of that id exists already: ids are never reused (HTTP 409)."""


class BadStudioRequest(ClientError):
    """A project id, member name, role, note or time the door cannot take."""


class Heads(Protocol):
    """Port: a scene's head, for its recorded owner (``services/executor/client.SceneFiles``)."""

    async def head(self, scene_id: str) -> Head | None: ...


class SceneLister(Heads, Protocol):
    """Port: the scenes a user owns, by head (``SceneFiles.scenes_of``)."""

    async def scenes_of(self, user: str, limit: int) -> list[Head]: ...


async def visible_heads(files: SceneLister, book: ProjectBook, user: str, limit: int) -> list[Head]:
    """The heads of the scenes ``user`` reaches, at most ``limit``: its own in no project,
    then those filed in its projects (its own filed ones among them), by id."""
    owned = [h for h in await files.scenes_of(user, limit) if h.scene_id not in book.filed]
    filed = sorted(s for p in book.visible(user) for s in p.scenes)[: max(0, limit - len(owned))]
    found = [await files.head(scene_id) for scene_id in filed]
    return [*owned, *[h for h in found if h is not None]]


class Publisher(Protocol):
    async def publish(self, event: Event) -> int: ...


def lock_fields(lock: Lock) -> dict[str, Any]:
    """A lock as the CLI's JSON and the bus door's answers show it."""
    return {
        "lock_id": lock.lock_id, "scene_id": lock.scene_id, "holder": lock.holder,
        "held_by": lock.held_by, "expires_at": lock.expires_at, "note": lock.note,
    }  # fmt: skip


def project_fields(
    book: ProjectBook, project_id: str, user: str, now: float, limit: int = MAX_SCENES
) -> dict[str, Any]:
    """A project as its member ``user`` sees it: its role, the members, the scenes and the
    locks held at ``now`` (at most ``limit`` of each list); ``NotOwned`` for anyone else."""
    project = book.projects.get(project_id)
    role = book.role(project_id, user)
    if project is None or role is None:
        raise NotOwned(f"no project {project_id}")
    scenes = sorted(project.scenes)
    locks = [held for held in (book.lock(scene, now) for scene in scenes) if held is not None]
    return {
        "project_id": project_id,
        "role": role,
        "members": dict(sorted(project.members.items())),
        "scenes": scenes[:limit],
        "locks": [lock_fields(held) for held in locks][:limit],
    }


def locked_message(lock: Lock, scene_id: str) -> str:
    until = time.strftime("%H:%M:%S UTC", time.gmtime(lock.expires_at))
    by = "a live session of " if lock.held_by == "session" else ""
    return (
        f"scene {scene_id} is locked by {by}{lock.holder} until {until}; ask {lock.holder} "
        "to unlock it, or a lead of its project to break the lock"
    )


def _project_id(project_id: str) -> str:
    try:
        subjects.check_token(project_id, "project id")
    except ValueError as exc:
        raise BadStudioRequest(str(exc)) from None
    if len(project_id) > 64:
        raise BadStudioRequest(f"project id {project_id[:64]!r}... is over 64 characters")
    return project_id


def _member(name: str) -> str:
    if not name or len(name) > 128 or any(c.isspace() or not c.isprintable() for c in name):
        raise BadStudioRequest("a member is a user name of 1-128 characters without spaces")
    return name


@dataclass
class Studio:
    book: Book
    heads: Heads
    publisher: Publisher
    clock: Callable[[], float] = field(default=time.time)

    async def _publish(self, event: Event) -> ProjectBook:
        await self.publisher.publish(event)
        return await self.book.current()

    def _id(self, kind: str) -> str:
        return f"{kind}-{uuid.uuid4().hex}"

    async def _member_project(self, project_id: str, user: str) -> tuple[ProjectBook, Role]:
        book = await self.book.current()
        role = book.role(_project_id(project_id), user)
        if role is None:
            raise NotOwned(f"no project {project_id}")
        return book, role

    async def scene_role(self, scene_id: str, user: str) -> tuple[ProjectBook, Head, Role]:
        """The user's role on a scene it reaches; ``NotOwned`` when it reaches none."""
        head = await self.heads.head(scene_id)
        book = await self.book.current()
        role = book.scene_role(scene_id, head.owner if head else None, user)
        if head is None or role is None:
            raise NotOwned(f"no scene {scene_id}")
        return book, head, role

    async def may_start(self, scene_id: str, user: str) -> None:
        """Refuse a run the user may not start on the scene: one on a scene it does not
        reach (``NotOwned``, as for an unknown scene), a viewer's, or one on a scene another
        user has locked. A scene with no head yet is anyone's first revision."""
        head = await self.heads.head(scene_id)
        if head is None:
            return
        book = await self.book.current()
        role = book.scene_role(scene_id, head.owner, user)
        if role is None:
            # Another user's personal scene or another project's: answered like an unknown
            # one, so no door tells "not yours" from "not there" (the policy denies it too).
            raise NotOwned(f"no scene {scene_id}")
        if not may_run(role):
            raise Forbidden(
                f"you are a {role} of scene {scene_id}'s project and may only read it; "
                "ask a lead of the project to make you an artist"
            )
        held = book.lock(scene_id, self.clock())
        if held is not None and held.holder != user:
            raise SceneLocked(locked_message(held, scene_id))

    async def answers_for(
        self, asked_user: str, lead_of: str | None, scene_id: str, user: str
    ) -> bool:
        """Whether ``user`` may answer an approval of ``asked_user``'s run on the scene: the
        run's own user (``Forbidden`` when the run waits for a lead), or a lead of the
        scene's project. False: not the user's to see at all."""
        head = await self.heads.head(scene_id)
        book = await self.book.current()
        role = book.scene_role(scene_id, head.owner if head else asked_user, user)
        if user == asked_user:
            if lead_of is not None and not may_manage(role):
                leads = ", ".join(book.leads_of(scene_id)) or "a lead"
                raise Forbidden(
                    f"this approval waits for a lead of project {lead_of}; you are its "
                    f"{role} and may not approve your own destructive operations: ask {leads}"
                )
            return True
        return may_manage(role)

    async def create(self, project_id: str, user: str) -> ProjectBook:
        book = await self.book.current()
        if _project_id(project_id) in book.projects:
            raise ProjectExists(f"project {project_id} exists; choose another id")
        event = ProjectCreated(
            event_id=self._id("project"), at=self.clock(), project_id=project_id, by=user
        )
        book = await self._publish(event)
        if book.role(project_id, user) != "lead":
            raise BadStudioRequest(f"project {project_id} was created by another user meanwhile")
        return book

    async def add_member(self, project_id: str, member: str, role: str, user: str) -> ProjectBook:
        book, mine = await self._member_project(project_id, user)
        if role not in ROLES:
            raise BadStudioRequest(f"role {role[:32]!r} is not one of {', '.join(ROLES)}")
        if not may_manage(mine):
            raise Forbidden(f"you are a {mine} of {project_id}; only a lead adds members")
        project = book.projects[project_id]
        if _member(member) not in project.members and len(project.members) >= MAX_MEMBERS:
            raise BadStudioRequest(f"project {project_id} has {MAX_MEMBERS} members, the most")
        event = MemberAdded(
            event_id=self._id("member"),
            at=self.clock(),
            project_id=project_id,
            member=member,
            role=role,
            by=user,
        )
        book = await self._publish(event)
        if book.role(project_id, member) != role:
            raise BadStudioRequest(
                f"{member} stays {book.role(project_id, member)}: a project keeps one lead"
            )
        return book

    async def remove_member(self, project_id: str, member: str, user: str) -> ProjectBook:
        book, mine = await self._member_project(project_id, user)
        if member != user and not may_manage(mine):
            raise Forbidden(f"you are a {mine} of {project_id}; only a lead removes members")
        if book.role(project_id, _member(member)) is None:
            raise NotOwned(f"no member {member} in project {project_id}")
        event = MemberRemoved(
            event_id=self._id("member"),
            at=self.clock(),
            project_id=project_id,
            member=member,
            by=user,
        )
        book = await self._publish(event)
        if book.role(project_id, member) is not None:
            raise BadStudioRequest(f"{member} is the last lead of {project_id}; add another first")
        return book

    async def file_scene(self, project_id: str, scene_id: str, user: str) -> ProjectBook:
        book, mine = await self._member_project(project_id, user)
        head = await self.heads.head(scene_id)
        if head is None or not head.owner or head.owner != user or scene_id in book.filed:
            raise NotOwned(f"no scene {scene_id} of your own that is in no project yet")
        if not may_run(mine):
            raise Forbidden(f"you are a {mine} of {project_id}; a viewer files no scenes")
        event = SceneFiled(
            event_id=self._id("file"),
            at=self.clock(),
            project_id=project_id,
            scene_id=scene_id,
            by=user,
        )
        book = await self._publish(event)
        if book.filed.get(scene_id) != project_id:
            raise BadStudioRequest(f"scene {scene_id} was not filed: the project is full")
        return book

    async def lock(
        self, scene_id: str, user: str, ttl: float = LOCK_TTL, note: str = "",
        held_by: Holder = "person",
    ) -> Lock:  # fmt: skip
        if not 0 < ttl <= MAX_LOCK_TTL:
            raise BadStudioRequest(f"a lock lasts more than 0 and at most {MAX_LOCK_TTL:.0f} s")
        if len(note) > MAX_NOTE:
            raise BadStudioRequest(f"a lock's note is at most {MAX_NOTE} characters")
        book, _, role = await self.scene_role(scene_id, user)
        if not may_run(role):
            raise Forbidden(f"you are a {role} of scene {scene_id}'s project; viewers lock nothing")
        now = self.clock()
        await self._expire(book, scene_id, now)
        held = book.lock(scene_id, now)
        if held is not None and held.holder != user:
            raise SceneLocked(locked_message(held, scene_id))
        if held is not None:  # the holder's own lock, taken again: extended by a new one
            await self._publish(
                LockReleased(
                    event_id=self._id("release"),
                    at=now,
                    lock_id=held.lock_id,
                    scene_id=scene_id,
                    holder=user,
                )
            )
        event = LockTaken(
            event_id=self._id("lock"),
            at=now,
            lock_id=self._id("lock"),
            scene_id=scene_id,
            holder=user,
            held_by=held_by,
            expires_at=now + ttl,
            note=note,
        )
        book = await self._publish(event)
        got = book.lock(scene_id, now)
        if got is None or got.lock_id != event.lock_id:
            raise SceneLocked(locked_message(got, scene_id) if got else f"scene {scene_id}")
        return got

    async def unlock(self, scene_id: str, user: str) -> Lock:
        book, _, _ = await self.scene_role(scene_id, user)
        held = book.lock(scene_id, self.clock())
        if held is None:
            raise NotOwned(f"no lock on scene {scene_id}")
        if held.holder != user:
            raise Forbidden(
                f"scene {scene_id} is locked by {held.holder}, not you; a lead of its "
                "project may break the lock (`blendmesh scenes lock --break`)"
            )
        await self._publish(
            LockReleased(
                event_id=self._id("release"),
                at=self.clock(),
                lock_id=held.lock_id,
                scene_id=scene_id,
                holder=held.holder,
            )
        )
        return held

    async def break_lock(self, scene_id: str, user: str, note: str = "") -> Lock:
        if len(note) > MAX_NOTE:
            raise BadStudioRequest(f"a note is at most {MAX_NOTE} characters")
        book, _, role = await self.scene_role(scene_id, user)
        if not may_manage(role):
            raise Forbidden(
                f"you are a {role} of scene {scene_id}'s project; only a lead breaks locks"
            )
        held = book.lock(scene_id, self.clock())
        if held is None:
            raise NotOwned(f"no lock on scene {scene_id}")
        await self._publish(
            LockBroken(
                event_id=self._id("break"),
                at=self.clock(),
                lock_id=held.lock_id,
                scene_id=scene_id,
                holder=held.holder,
                by=user,
                note=note,
            )
        )
        return held

    async def _expire(self, book: ProjectBook, scene_id: str, now: float) -> None:
        """Record a lock whose time ran out, once, before anything else happens to it."""
        lapsed = book.lapsed(scene_id, now)
        if lapsed is not None:
            await self._publish(
                LockExpired(
                    event_id=f"expired-{lapsed.lock_id}",
                    at=now,
                    lock_id=lapsed.lock_id,
                    scene_id=scene_id,
                    holder=lapsed.holder,
                )
            )
