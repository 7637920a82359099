"""What the doors do with a project's libraries (ADR 0060): list their revisions, build
the run that points a shot at another revision of one (``library.update``), and the run
that publishes a .blend as a library's next revision and points a shot at it; policy,
approval, the log and the audit treat each like any run. Only the executor publishes.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from contracts.events import RunRequested
from contracts.libraries import MAX_LIBRARY_BYTES, is_name, project_of, publish_plan, update_plan
from contracts.subjects import check_token
from services.doors.core.client import ClientError
from services.doors.core.requests import build_request, new_id
from services.doors.core.scene_client import SceneDoor, check_upload
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
        _check_name(name)
        if revision < 1:
            raise NotALibrary("a library revision is a number, 1 or more")
        await SceneDoor(self.bus, self.settings).own(scene_id, user)
        return build_request(
            user=user,
            scene_id=scene_id,
            plan=update_plan(new_id("req"), name, revision),
            pre_approved=pre_approved,
        )

    async def publish_request(
        self, user: str, scene_id: str, name: str, file: Path, pre_approved: bool = False
    ) -> RunRequested:
        """Stage the .blend at ``file`` and build the run that publishes it as the next
        revision of library ``name`` and points ``user``'s scene at it."""
        from services.executor.client import ObjectStoreUploads

        check_token(scene_id, "scene id")
        _check_name(name)
        await SceneDoor(self.bus, self.settings).own(scene_id, user)
        try:
            source = await asyncio.to_thread(file.open, "rb")
        except OSError as exc:
            raise ClientError(f"cannot read {file.name}: {exc.strerror}") from None
        with source:
            what = f"library {file.name}"
            size = await asyncio.to_thread(check_upload, source, what, MAX_LIBRARY_BYTES)
            blob = await ObjectStoreUploads(self.bus.js, self.bus.prefix).stage(user, source)
        return build_request(
            user=user,
            scene_id=scene_id,
            plan=publish_plan(new_id("req"), name, blob, size),
            pre_approved=pre_approved,
        )


def _check_name(name: str) -> None:
    if not is_name(name):
        raise NotALibrary(
            f"{name!r} names no library: a library's name is lower-case letters, digits, "
            "'_' or '-'; `blendmesh libraries` lists yours"
        )
