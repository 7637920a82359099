"""Who owns what, one rule for every door (the gateway, the MCP server, the CLI).

    a run        the user of its RunRequested
    a thread     the user whose run first used it; a thread nobody used yet is anyone's
    a scene      the owner its first revision recorded (``Head.owner``)
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
from typing import TYPE_CHECKING

from contracts.events import ApprovalRequested, RunRequested
from contracts.scenes import Head
from services.doors.core.client import ClientError, MeshClient

if TYPE_CHECKING:  # a type only: the rules read no store; whoever builds ``Owners`` has one
    from services.executor.client import SceneFiles


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


def own_scene(head: Head | None, scene_id: str, user: str) -> Head:
    if head is None or not owns(head.owner, user):
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

    async def run(self, run_id: str, user: str) -> RunRequested:
        return own_run(await self.client.requested(run_id), run_id, user)

    async def scene(self, scene_id: str, user: str) -> Head:
        return own_scene(await self.files.head(scene_id), scene_id, user)
