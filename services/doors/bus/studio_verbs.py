"""The bus door's project and lock verbs (docs/bus.md §4): the asker's projects, members,
roles and locks, through the rules every door shares (services/doors/core/studio.py).

A project or scene the asker is no member of answers NOT_FOUND exactly like one that does
not exist; a role that does not allow the change answers FORBIDDEN naming the role; a
lock another user holds answers CONFLICT naming the holder.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import msgspec

from contracts.door import (
    MAX_LIST,
    DoorError,
    DoorReply,
    ErrorCode,
    ListQuery,
    LockRef,
    LockRequest,
    MemberChange,
    ProjectRef,
    SceneFiling,
)
from contracts.errors import BlendmeshError
from contracts.project_book import ProjectBook
from services.doors.core.ownership import NotOwned
from services.doors.core.studio import (
    BadStudioRequest,
    Forbidden,
    ProjectExists,
    SceneLocked,
    Studio,
    lock_fields,
    project_fields,
)
from services.runtime.server.identity import UserEntry
from services.runtime.service.projects import BookBehind

_T = TypeVar("_T")
Verb = Callable[[UserEntry, bytes], Awaitable[DoorReply]]

# Each refusal of the shared rules, as the door's error code.
CODES: tuple[tuple[type[BlendmeshError], ErrorCode], ...] = (
    (NotOwned, "NOT_FOUND"),
    (Forbidden, "FORBIDDEN"),
    (SceneLocked, "CONFLICT"),
    (ProjectExists, "CONFLICT"),
    (BadStudioRequest, "INVALID"),
    (BookBehind, "UNAVAILABLE"),
)


def _refused(code: ErrorCode, message: str) -> DoorReply:
    return DoorReply(ok=False, error=DoorError(code=code, message=message))


def _decode(data: bytes, kind: type[_T]) -> _T:
    return msgspec.json.decode(data or b"{}", type=kind)


@dataclass
class StudioVerbs:
    studio: Studio

    def table(self) -> dict[str, Verb]:
        verbs: dict[str, Callable[[UserEntry, bytes], Awaitable[DoorReply]]] = {
            "projects.list": self.projects,
            "projects.show": self.show,
            "projects.create": self.create,
            "projects.member": self.member,
            "projects.file": self.file,
            "locks.take": self.take,
            "locks.release": self.release,
            "locks.break": self.breaks,
        }
        return {name: self._guarded(verb) for name, verb in verbs.items()}

    def _guarded(self, verb: Verb) -> Verb:
        async def answer(user: UserEntry, data: bytes) -> DoorReply:
            try:
                return await verb(user, data)
            except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                return _refused("INVALID", f"{exc}; docs/bus.md §4 shows each verb's body")
            except tuple(kind for kind, _ in CODES) as exc:
                code = next(c for kind, c in CODES if isinstance(exc, kind))
                return _refused(code, str(exc))

        return answer

    def _project(self, book: ProjectBook, project_id: str, user: str) -> DoorReply:
        fields = project_fields(book, project_id, user, self.studio.clock(), MAX_LIST)
        return DoorReply(ok=True, project=fields)

    async def projects(self, user: UserEntry, data: bytes) -> DoorReply:
        query = _decode(data, ListQuery)
        book = await self.studio.book.current()
        now = self.studio.clock()
        listed = [
            project_fields(book, p.project_id, user.name, now, MAX_LIST)
            for p in book.visible(user.name)
        ]
        return DoorReply(ok=True, projects=listed[: query.limit])

    async def show(self, user: UserEntry, data: bytes) -> DoorReply:
        ref = _decode(data, ProjectRef)
        return self._project(await self.studio.book.current(), ref.project_id, user.name)

    async def create(self, user: UserEntry, data: bytes) -> DoorReply:
        ref = _decode(data, ProjectRef)
        return self._project(
            await self.studio.create(ref.project_id, user.name), ref.project_id, user.name
        )

    async def member(self, user: UserEntry, data: bytes) -> DoorReply:
        change = _decode(data, MemberChange)
        if change.role is None:
            book = await self.studio.remove_member(change.project_id, change.member, user.name)
            if book.role(change.project_id, user.name) is None:
                return DoorReply(ok=True)  # the asker left: nothing of it to show
        else:
            book = await self.studio.add_member(
                change.project_id, change.member, change.role, user.name
            )
        return self._project(book, change.project_id, user.name)

    async def file(self, user: UserEntry, data: bytes) -> DoorReply:
        filing = _decode(data, SceneFiling)
        book = await self.studio.file_scene(filing.project_id, filing.scene_id, user.name)
        return self._project(book, filing.project_id, user.name)

    async def take(self, user: UserEntry, data: bytes) -> DoorReply:
        asked = _decode(data, LockRequest)
        held = await self.studio.lock(
            asked.scene_id, user.name, asked.ttl_seconds, asked.note, asked.held_by
        )
        return DoorReply(ok=True, lock=lock_fields(held))

    async def release(self, user: UserEntry, data: bytes) -> DoorReply:
        ref = _decode(data, LockRef)
        return DoorReply(
            ok=True, lock=lock_fields(await self.studio.unlock(ref.scene_id, user.name))
        )

    async def breaks(self, user: UserEntry, data: bytes) -> DoorReply:
        ref = _decode(data, LockRef)
        held = await self.studio.break_lock(ref.scene_id, user.name, ref.note)
        return DoorReply(ok=True, lock=lock_fields(held))
