"""What every route needs: the mesh client and bus, and the owner lookups over the log.

Ownership is read from the log, the only source of truth: a run belongs to the user of its
RunRequested (read by its subject), a thread, a scene or an approval as ``owners`` folds
it. Anything not the caller's answers exactly like something unknown.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request

from contracts.events import ApprovalRequested, RunRequested
from services.client import MeshClient
from services.executor.client import SceneFiles
from services.gateway.errors import NotFound, Unavailable
from services.gateway.owners import IndexBehind, LogOwners, OwnerIndex
from services.runtime.host import Bus
from services.runtime.settings import Settings


@dataclass
class Gateway:
    settings: Settings
    bus: Bus
    client: MeshClient
    owners: LogOwners
    run_timeout: float  # seconds a synchronous route follows a run before answering 504

    @property
    def prefix(self) -> str:
        return self.bus.prefix

    async def own_run(self, run_id: str, user: str) -> RunRequested:
        requested = await self.client.requested(run_id)
        if requested is None or requested.user != user:
            raise NotFound(f"no run {run_id}")
        return requested

    async def _owners(self) -> OwnerIndex:
        try:
            return await self.owners.current()
        except IndexBehind as exc:
            raise Unavailable(str(exc)) from None

    async def thread_owner(self, thread_id: str) -> str | None:
        """The user whose run first used ``thread_id``; None for a new thread."""
        return (await self._owners()).threads.get(thread_id)

    async def own_scene(self, scene_id: str, user: str) -> None:
        """The scene is the user's: its first revision was theirs. Naming a scene id in a
        run, even one that failed, never grants it. Another user's scene is 404, like one
        that does not exist, so ids cannot be probed."""
        owner = await SceneFiles(self.bus.js, self.prefix).owner(scene_id)
        if owner == user:
            return
        # A scene committed before scenes had owners: whoever ran something on it.
        if owner == "" and (scene_id, user) in (await self._owners()).scenes:
            return
        raise NotFound(f"no scene {scene_id}")

    async def own_approval(self, approval_id: str, user: str) -> ApprovalRequested:
        found = (await self._owners()).approvals.get(approval_id)
        if found is None or found.user != user:
            raise NotFound(f"no approval {approval_id}")
        return found


def gateway(request: Request) -> Gateway:
    """FastAPI dependency: the app's Gateway (set by create_app)."""
    found: Gateway = request.app.state.gateway
    return found
