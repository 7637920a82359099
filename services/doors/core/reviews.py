"""A revision's change list and its reviews, for every door (CLI, gateway, MCP, bus).

Who may read a scene's change list and review its revisions is one rule, ``may_review``:
the scene's owner, and the users the registry marks approvers (``blendmesh users add
--approver``), who answer other users' approvals already and must see what they judge.
Projects with roles widen this one function; nothing else decides it. Anyone else is
answered exactly like an unknown scene, so ids cannot be probed.

A review is an event in the log (``scene.reviewed``); a revision's reviews are read back
from there, never kept elsewhere.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import msgspec

from contracts import inspection as artifacts
from contracts import subjects
from contracts.changes import ChangeList, Review
from contracts.diff import diff
from contracts.project_book import ProjectBook
from contracts.reviews import MAX_REVIEWS_READ, ReviewRefused, RevisionReviewed, check_review
from contracts.scenes import Head
from services.doors.core.client import ClientError
from services.doors.core.scene_client import NoScene
from services.runtime.nats.history import read_subject
from services.runtime.server.users import FILE_NAME, UsersFile
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings

if TYPE_CHECKING:
    from services.executor.client import SceneFiles

MAX_REVISION = 2**31  # revision numbers are counted from 1 and never reach this
# Reviews shown with one revision; older ones are counted.
MAX_SHOWN_REVIEWS = 50


class NoRevision(ClientError):
    """A revision number the scene does not have (HTTP 404); the message names its range."""


REVIEWING_ROLES: frozenset[str] = frozenset({"lead", "supervisor"})  # docs/studio.md


def may_review(
    user: str, owner: str, approvers: frozenset[str] | set[str], role: str | None = None
) -> bool:
    """Whether ``user`` may review the revisions of a scene ``owner`` owns: the owner, an
    approver, or a lead or supervisor of the project the scene is filed in (``role``, the
    user's role there). An unrecorded owner ("") is nobody's scene."""
    return bool(owner) and (user == owner or user in approvers or role in REVIEWING_ROLES)


def may_read_changes(
    user: str, owner: str, approvers: frozenset[str] | set[str], role: str | None = None
) -> bool:
    """Whether ``user`` may read a scene's change lists: whoever may review it, and every
    member of its project (a viewer reads what it may not judge)."""
    return bool(owner) and (may_review(user, owner, approvers, role) or role is not None)


def check_revision(value: object, what: str) -> int:
    """``value`` as a revision number, or ``NoRevision`` saying what a revision number is.
    Doors that parse text pass what they parsed; a bool is not a number here."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise NoRevision(
            f"{what} {str(value)[:40]!r} is not a revision number: give a whole number"
        )
    if not 1 <= value < MAX_REVISION:
        raise NoRevision(f"{what} {value} is not a revision number: revisions count from 1")
    return value


def registry_approvers(settings: Settings) -> Callable[[], frozenset[str]]:
    """The approvers of the mesh's user registry, read again when the file changes."""
    return UsersFile(settings.home / FILE_NAME).approvers


@dataclass
class Revisions:
    """Change lists and reviews of scenes, as the user a door authenticated."""

    bus: Bus
    approvers: Callable[[], frozenset[str]] = field(default=frozenset)
    # The projects as the log holds them (services/runtime/service/projects.py); None:
    # scenes are their owners' alone, as before projects.
    book: Callable[[], Awaitable[ProjectBook]] | None = None

    @classmethod
    def of(cls, bus: Bus, approvers: Callable[[], frozenset[str]]) -> Revisions:
        """Change lists and reviews on ``bus``, by the projects the log holds."""
        from services.runtime.service.projects import projects_of

        return cls(bus, approvers, projects_of(bus).current)

    @property
    def files(self) -> SceneFiles:
        from services.executor.client import SceneFiles

        return SceneFiles(self.bus.js, self.bus.prefix)

    async def reviewable(self, scene_id: str, user: str, reviewing: bool = False) -> Head:
        """The head of a scene whose change lists ``user`` may read (and, ``reviewing``,
        whose revisions it may review); ``NoScene`` for any other, as for no scene."""
        try:
            subjects.check_token(scene_id, "scene id")
        except ValueError:
            raise NoScene(f"no scene {scene_id[:128]}; `blendmesh scenes` lists yours") from None
        head = await self.files.head(scene_id)
        if head is None:
            raise NoScene(f"no scene {scene_id}; `blendmesh scenes` lists yours")
        role = None
        if self.book is not None:
            role = (await self.book()).scene_role(scene_id, head.owner, user)
        if not may_read_changes(user, head.owner, self.approvers(), role):
            raise NoScene(f"no scene {scene_id}; `blendmesh scenes` lists yours")
        if reviewing and not may_review(user, head.owner, self.approvers(), role):
            raise ReviewRefused(
                f"only a lead or supervisor of scene {scene_id}'s project, its owner or an "
                f"approver reviews its revisions; you are its {role}"
            )
        return head

    async def _numbers(self, scene_id: str) -> list[int]:
        return sorted({n for n, _ in await self.files.history(scene_id)})

    async def _inspection(self, scene_id: str, revision: int) -> artifacts.Inspection:
        found = await self.files.revision_inspection(scene_id, revision)
        if found is None:
            raise NoRevision(
                f"revision {revision} of scene {scene_id} has no inspection artifact (it was "
                "committed before they were kept, or its artifact was collected); compare "
                "two newer revisions"
            )
        return await asyncio.to_thread(artifacts.decode, found[1])

    async def changes(
        self, scene_id: str, user: str, base: int | None = None, revision: int | None = None
    ) -> ChangeList:
        """What ``revision`` (the head when None) changed against ``base`` (its parent, the
        revision before it, when None), with the revision's reviews."""
        head = await self.reviewable(scene_id, user)
        numbers = await self._numbers(scene_id)
        after_n = head.revision if revision is None else check_revision(revision, "revision")
        _known(scene_id, after_n, numbers)
        if base is None:
            before_n = max((n for n in numbers if n < after_n), default=None)
        else:
            before_n = _known(scene_id, check_revision(base, "base revision"), numbers)
        after = await self._inspection(scene_id, after_n)
        before = None if before_n is None else await self._inspection(scene_id, before_n)
        listed = await asyncio.to_thread(diff, before, after)
        reviews = [r for r in await self._reviews(scene_id) if r.revision == after_n]
        shown = reviews[-MAX_SHOWN_REVIEWS:]
        return msgspec.structs.replace(
            listed,
            reviews=[_review(r) for r in shown],
            more_reviews=len(reviews) - len(shown),
        )

    async def _reviews(self, scene_id: str) -> list[RevisionReviewed]:
        subject = subjects.scene_events(self.bus.prefix, scene_id, "reviewed")
        found = await read_subject(self.bus.js, self.bus.prefix, subject, limit=MAX_REVIEWS_READ)
        return [e for e in found if isinstance(e, RevisionReviewed) and e.scene_id == scene_id]

    async def _count(self, scene_id: str) -> int:
        subject = subjects.scene_events(self.bus.prefix, scene_id, "reviewed")
        stream = subjects.stream_name(self.bus.prefix)
        info = await self.bus.js.stream_info(stream, subjects_filter=subject)
        return sum((info.state.subjects or {}).values())

    async def review(
        self, scene_id: str, user: str, revision: int, verdict: str, note: str = ""
    ) -> RevisionReviewed:
        """Record ``user``'s review of ``revision`` in the log; refused (``ReviewRefused``,
        ``NoScene``, ``NoRevision``) before anything is published."""
        checked = check_review(verdict, note)
        await self.reviewable(scene_id, user, reviewing=True)
        if await self._count(scene_id) >= MAX_REVIEWS_READ:
            raise ReviewRefused(
                f"scene {scene_id} holds {MAX_REVIEWS_READ} reviews, the most one scene "
                "keeps; import its head as a new scene to review it further"
            )
        number = _known(
            scene_id, check_revision(revision, "revision"), await self._numbers(scene_id)
        )
        found = await self.files.revision_inspection(scene_id, number)
        decoded = await asyncio.to_thread(artifacts.decode, found[1]) if found else None
        scene_hash = decoded.scene_hash if decoded else ""
        event = RevisionReviewed(
            event_id=str(uuid.uuid4()),
            at=time.time(),
            scene_id=scene_id,
            revision=number,
            reviewer=user,
            verdict=checked,
            note=note,
            scene_hash=scene_hash,
        )
        await self.bus.publisher.publish(event)
        return event


def _known(scene_id: str, revision: int, numbers: Iterable[int]) -> int:
    known = list(numbers)
    if revision not in known:
        span = f"it has revisions {known[0]} to {known[-1]}" if known else "it has none"
        raise NoRevision(
            f"scene {scene_id} has no revision {revision} ({span}); "
            f"`blendmesh scenes history {scene_id}` lists them"
        )
    return revision


def _review(event: RevisionReviewed) -> Review:
    return Review(reviewer=event.reviewer, verdict=event.verdict, note=event.note, at=event.at)
