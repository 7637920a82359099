"""What every route needs: the mesh client and bus, and the owner lookups over the log.

Ownership is decided by ``services/doors/core/ownership.py``, as every door decides it, over what
the log says: a run's RunRequested (read by its subject), a scene's head, and a thread or
an approval as ``owners`` folds them. Anything not the caller's answers exactly like
something unknown (404).
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request

from contracts.events import ApprovalRequested, RunRequested
from contracts.scenes import Head
from services.doors.core import ownership
from services.doors.core.client import MeshClient
from services.doors.core.studio import Studio
from services.doors.gateway.errors import Unavailable
from services.executor.client import SceneFiles
from services.runtime.service.host import Bus
from services.runtime.service.owners import IndexBehind, LogOwners, OwnerIndex
from services.runtime.service.projects import projects_of
from services.runtime.service.settings import Settings


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

    @property
    def _recorded(self) -> ownership.Owners:
        return ownership.Owners(
            self.client, SceneFiles(self.bus.js, self.prefix), projects_of(self.bus)
        )

    @property
    def studio(self) -> Studio:
        """Projects, members and locks, for the routes (services/doors/core/studio.py)."""
        return Studio(
            projects_of(self.bus), SceneFiles(self.bus.js, self.prefix), self.bus.publisher
        )

    async def own_run(self, run_id: str, user: str) -> RunRequested:
        """The user's own run, or one on a scene of a project the user leads (a lead
        follows what it approves); any other is 404."""
        requested = await self.client.requested(run_id)
        if (
            requested is not None
            and requested.user != user
            and await self.studio.answers_for(requested.user, None, requested.scene_id, user)
        ):
            return requested
        return ownership.own_run(requested, run_id, user)

    async def _owners(self) -> OwnerIndex:
        try:
            return await self.owners.current()
        except IndexBehind as exc:
            raise Unavailable(str(exc)) from None

    async def own_thread(self, thread_id: str, user: str) -> None:
        """A new thread, or one the user's run started; another user's is 404."""
        ownership.own_thread((await self._owners()).threads.get(thread_id), thread_id, user)

    async def own_scene(self, scene_id: str, user: str) -> Head:
        """The head of the user's scene; another user's, or one nobody owns, is 404 like
        one that does not exist, so ids cannot be probed."""
        return await self._recorded.scene(scene_id, user)

    async def own_approval(self, approval_id: str, user: str) -> ApprovalRequested:
        """An approval of the user's own run, or of a run on a scene of a project the user
        leads; ``Forbidden`` when it is the user's own but waits for a lead."""
        found = (await self._owners()).approvals.get(approval_id)
        if found is not None:
            requested = await self.client.requested(found.run_id)
            if requested is not None and await self.studio.answers_for(
                requested.user, found.lead_of, requested.scene_id, user
            ):
                return found
        return ownership.own_approval(None, approval_id, user)


def gateway(request: Request) -> Gateway:
    """FastAPI dependency: the app's Gateway (set by create_app)."""
    found: Gateway = request.app.state.gateway
    return found
