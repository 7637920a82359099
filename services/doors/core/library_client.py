"""What the doors do with a project's libraries (ADR 0060): list their revisions, and
build the run that points a shot at another revision of one (``library.update``), which
policy, approval, the log and the audit treat like any run.
"""

from __future__ import annotations

from dataclasses import dataclass

from contracts.events import RunRequested
from contracts.libraries import is_name, project_of, update_plan
from contracts.subjects import check_token
from services.doors.core.client import ClientError
from services.doors.core.requests import build_request, new_id
from services.doors.core.scene_client import SceneDoor
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings

MAX_LISTED = 500  # library revisions one listing shows, newest libraries' first by name


class NotALibrary(ClientError):
    """A library name or revision that cannot name one (HTTP 422)."""


@dataclass
class LibraryDoor:
    bus: Bus
    settings: Settings

    async def revisions(self, user: str) -> list[dict[str, object]]:
        """Each revision of the libraries of ``user``'s project: name, revision, content
        hash prefix; at most ``MAX_LISTED``."""
        from services.executor.client import LibraryFiles

        found = await LibraryFiles(self.bus.js, self.bus.prefix).listing(project_of(user))
        return [
            {"library": name, "revision": revision, "sha256": digest}
            for name, revision, digest in sorted(found)[:MAX_LISTED]
        ]

    async def update_request(
        self, user: str, scene_id: str, name: str, revision: int, pre_approved: bool = False
    ) -> RunRequested:
        """The run that points ``user``'s scene at ``revision`` of library ``name``."""
        check_token(scene_id, "scene id")
        if not is_name(name):
            raise NotALibrary(
                f"{name!r} names no library: a library's name is lower-case letters, digits, "
                "'_' or '-'; `blendmesh libraries` lists yours"
            )
        if revision < 1:
            raise NotALibrary("a library revision is a number, 1 or more")
        await SceneDoor(self.bus, self.settings).own(scene_id, user)
        return build_request(
            user=user,
            scene_id=scene_id,
            plan=update_plan(new_id("req"), name, revision),
            pre_approved=pre_approved,
        )
