"""Who owns what, one rule for every door (the gateway, the MCP server, the CLI).

    a run        the user of its RunRequested
    a thread     the user whose run first used it; a thread nobody used yet is anyone's
    a scene      the owner its first revision recorded (``Head.owner``), and, once it is
                 filed in a project, every member of that project (docs/studio.md)
    an approval  the user of the run it waits in

A scene with no recorded owner (committed before scenes had owners) is nobody's: no door
shows it to anyone, whoever ran on it. Running on a scene, even once, never granted it
(a run may name any scene id, and fail), so a door that let "ran on it" stand in for
ownership would hand a legacy scene to whoever named it. Its revisions stay in the
mesh's home, where the home's owner reaches them without a door.

Anything not the caller's is refused exactly like something unknown, with the same
``NotOwned`` message, so ids cannot be probed; each door answers it as its "not found"
(HTTP 404, the MCP NotFound). The rules take what was read and do no I/O; ``Owners``
reads the facts every door reads alike (threads and approvals come from each door's own
reading of the log).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from contracts.events import ApprovalRequested, RunRequested
from contracts.scenes import Head
from services.doors.core.client import ClientError, MeshClient

if TYPE_CHECKING:  # a type only: the rules read no store; whoever builds ``Owners`` has one
    from contracts.project_book import ProjectBook
    from services.executor.client import SceneFiles


class Book(Protocol):
    """Port: the projects book, current with the log (``services/runtime/service/projects``)."""

    async def current(self) -> ProjectBook: ...


class NotOwned(ClientError):
    """Unknown, or another user's: a caller cannot tell which."""


def owns(owner: str | None, user: str) -> bool:
    """Whether a thing whose recorded owner is ``owner`` is ``user``'s; an owner that is
    unknown (None) or was never recorded ("") is nobody."""
    return bool(owner) and owner == user


def own_run(requested: RunRequested | None, run_id: str, user: str) -> RunRequested:
    if requested is None or not owns(requested.user, user):
        raise NotOwned(f"no run {run_id}")
    return requested


def own_thread(starter: str | None, thread_id: str, user: str) -> None:
    """A new thread (no ``starter``) may be started by anyone; a used one continued only
    by the user who started it."""
    if starter is not None and not owns(starter, user):
        raise NotOwned(f"no thread {thread_id}")


def own_scene(head: Head | None, scene_id: str, user: str, book: ProjectBook | None = None) -> Head:
    """The head of a scene ``user`` reaches: its own, or one filed in a project it is a
    member of (any role reads)."""
    if head is None:
        raise NotOwned(f"no scene {scene_id}")
    if book is not None and book.scene_role(scene_id, head.owner, user) is not None:
        return head
    if book is not None and scene_id in book.filed:
        raise NotOwned(f"no scene {scene_id}")  # filed: the project's members decide
    if not owns(head.owner, user):
        raise NotOwned(f"no scene {scene_id}")
    return head


def own_approval(asked: ApprovalRequested | None, approval_id: str, user: str) -> ApprovalRequested:
    if asked is None or not owns(asked.user, user):
        raise NotOwned(f"no approval {approval_id}")
    return asked


@dataclass
class Owners:
    """The rule applied to what the mesh records: a run's request in the log, a scene's
    head in the executor's store."""

    client: MeshClient
    files: SceneFiles
    book: Book | None = None  # the projects book; None: scenes are their owners' alone

    async def run(self, run_id: str, user: str) -> RunRequested:
        return own_run(await self.client.requested(run_id), run_id, user)

    async def scene(self, scene_id: str, user: str) -> Head:
        head = await self.files.head(scene_id)
        book = None if self.book is None else await self.book.current()
        return own_scene(head, scene_id, user, book)
