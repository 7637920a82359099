"""What the doors (CLI, gateway) share to work with whole scenes: import a .blend, revert
to a revision, read a scene's summary and history, and keep a person's changes to an
exported file from being overwritten by a run.

Import and revert are runs (``contracts/scene_files.py``): the door stages the file and
builds the request; ``MeshClient`` submits and follows it like any other. Only a scene's
owner sees it or changes it; another user's scene answers exactly like a missing one.
"""

from __future__ import annotations

import asyncio
import io
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from contracts import inspection as artifacts
from contracts import subjects
from contracts.events import RunRequested
from contracts.libraries import MAX_LIBRARY_BYTES
from contracts.scene_files import blend_problem, import_plan, revert_plan
from contracts.scene_report import RevisionEntry, scene_report
from contracts.scenes import Head
from services.doors.core import ownership
from services.doors.core.client import ClientError
from services.doors.core.requests import build_request, new_id
from services.doors.core.studio import visible_heads
from services.runtime.service.host import Bus
from services.runtime.service.projects import projects_of
from services.runtime.service.settings import Settings

# The executor's stores are imported where a scene is read or staged: `blendmesh run`
# imports this module only for the guard on the exported file, which reads no store.
if TYPE_CHECKING:
    from services.executor.adapters.exports import SceneExports
    from services.executor.client import SceneFiles

Choice = Literal["adopt", "discard"]
MAX_LISTED_SCENES = 200
MAX_LISTED_REVISIONS = 100
# The bytes of a file's start that tell a .blend: its magic, or a compressed first block
# (zstd's largest is 128 KiB) holding it.
HEAD_BYTES = 256 * 1024


class NoScene(ClientError):
    """No such scene, or another user's (HTTP 404)."""


class UploadTooLarge(ClientError):
    """A .blend larger than BLENDMESH_MAX_UPLOAD_BYTES (HTTP 413)."""


class NotABlend(ClientError):
    """The file to import is not a .blend (HTTP 422)."""


class LibraryProblem(ClientError):
    """A library the shot links is missing, not staged, too large, or one too many (HTTP
    422)."""


class SceneFileChanged(ClientError):
    """The exported .blend is not what blendmesh wrote: a run would overwrite a person's
    work (HTTP 409). ``advice`` names the two ways out in the door's own words."""

    def __init__(self, scene_id: str, path: Path, adopt: str, discard: str) -> None:
        super().__init__(
            f"scene {scene_id}: {path.name} in the scenes folder is not the file blendmesh "
            "last wrote there (it was edited, or put there by hand), and a run would "
            f"overwrite it; nothing was planned. Use {adopt} to import the file as a new "
            f"revision of {scene_id} first and run on it, or {discard} to let the run "
            f"replace it (the file is kept beside it as {path.name}.bak-<time>)"
        )
        self.scene_id = scene_id
        self.path = path


def check_upload(source: IO[bytes], what: str, limit: int) -> int:
    """Refuse a file too large to import or that is not a .blend, before it is staged; its
    size in bytes. ``source`` is read from where it stands, its first ``HEAD_BYTES`` only,
    and left there (file work: call it off the event loop)."""
    start = source.tell()
    size = source.seek(0, io.SEEK_END) - start
    if size > limit:
        raise UploadTooLarge(
            f"{what} holds {size} bytes, more than the {limit} an import takes "
            "(BLENDMESH_MAX_UPLOAD_BYTES); save it compressed (File > Save with "
            "Compress) or raise the limit"
        )
    source.seek(start)
    head = source.read(HEAD_BYTES)
    source.seek(start)
    check_head(head, what)
    return size


def check_head(head: bytes, what: str) -> None:
    """Refuse a file whose first ``HEAD_BYTES`` (all of it, when shorter) are not a .blend's,
    so a door receiving one can stop before the rest arrives."""
    problem = blend_problem(head, what)
    if problem is not None:
        raise NotABlend(problem)


@dataclass
class SceneDoor:
    """Scene requests and reads for one mesh, as any user the door authenticated."""

    bus: Bus
    settings: Settings

    @property
    def files(self) -> SceneFiles:
        from services.executor.client import SceneFiles

        return SceneFiles(self.bus.js, self.bus.prefix)

    async def own(self, scene_id: str, user: str) -> Head:
        """The head of ``user``'s scene; ``NoScene`` for a missing or another's scene."""
        head = await self.files.head(scene_id)
        book = await projects_of(self.bus).current()
        try:
            return ownership.own_scene(head, scene_id, user, book)
        except ownership.NotOwned:
            raise NoScene(f"no scene {scene_id}; `blendmesh scenes` lists yours") from None

    async def import_request(
        self,
        user: str,
        scene_id: str,
        data: bytes | IO[bytes],
        what: str,
        pre_approved: bool = False,
        sha256: bytes | None = None,
        libraries: dict[str, Path] | None = None,
        staged_libraries: dict[str, str] | None = None,
    ) -> RunRequested:
        """Stage ``data`` and build the run that makes it the scene's new revision: a new
        scene becomes ``user``'s; an existing one must be theirs already. ``data`` is the
        file (a seekable binary file, read a chunk at a time from where it stands) or, when
        small, its bytes; ``sha256`` its digest when the door computed it on receipt.
        ``libraries`` are the library files the shot links by name (shot_files.py);
        ``staged_libraries`` those a door staged already (``POST /api/uploads``), by name."""
        subjects.check_token(scene_id, "scene id")
        source = io.BytesIO(data) if isinstance(data, bytes) else data
        limit = self.settings.max_upload_bytes
        size = await asyncio.to_thread(check_upload, source, what, limit)
        if await self.files.head(scene_id) is not None:
            await self.own(scene_id, user)
        from services.executor.client import ObjectStoreUploads

        uploads = ObjectStoreUploads(self.bus.js, self.bus.prefix)
        staged: dict[str, tuple[str, int]] = {}
        for name, blob in sorted((staged_libraries or {}).items()):
            held = await uploads.size(user, blob)
            if held is None:
                raise LibraryProblem(
                    f"library {name}: no staged upload {blob[:19]}… of yours; stage the "
                    "library's .blend with POST /api/uploads and name the blob it answers"
                )
            if held > MAX_LIBRARY_BYTES:
                raise LibraryProblem(
                    f"library {name} holds {held} bytes, more than the {MAX_LIBRARY_BYTES} "
                    "a library may"
                )
            staged[name] = (blob, held)
        for name, path in sorted((libraries or {}).items()):
            with await asyncio.to_thread(path.open, "rb") as library:
                what = f"library {path.name}"
                held = await asyncio.to_thread(check_upload, library, what, MAX_LIBRARY_BYTES)
                staged[name] = (await uploads.stage(user, library), held)
        blob = await uploads.stage(user, source, sha256)
        return build_request(
            user=user,
            scene_id=scene_id,
            plan=import_plan(new_id("req"), blob, size, staged),
            pre_approved=pre_approved,
        )

    async def download(
        self, scene_id: str, user: str, folder: Path, revision: int | None = None
    ) -> list[Path]:
        """Write a revision of ``user``'s scene (the head when None) into ``folder``, with
        the library revisions it links (shot_download.py); the files written."""
        from services.doors.core.shot_download import download
        from services.executor.client import LibraryFiles

        head = await self.own(scene_id, user)
        found = head if revision is None else await self.files.find_revision(scene_id, revision)
        if found is None:
            raise NoScene(
                f"scene {scene_id} has no revision {revision}; "
                f"`blendmesh scenes history {scene_id}` lists its revisions"
            )
        libraries = LibraryFiles(self.bus.js, self.bus.prefix)
        return await download(self.files, libraries, found, head.owner or user, folder)

    async def revert_request(
        self, user: str, scene_id: str, revision: int, pre_approved: bool = False
    ) -> RunRequested:
        """The run that makes a new revision of ``user``'s scene equal to ``revision``."""
        head = await self.own(scene_id, user)
        known = {n for n, _ in await self.files.history(scene_id)}
        if revision not in known:
            raise ClientError(
                f"scene {scene_id} has no revision {revision} (its head is revision "
                f"{head.revision}); `blendmesh scenes history {scene_id}` lists them"
            )
        return build_request(
            user=user,
            scene_id=scene_id,
            plan=revert_plan(new_id("req"), revision),
            pre_approved=pre_approved,
        )

    async def scenes(self, user: str, limit: int = MAX_LISTED_SCENES) -> list[dict[str, Any]]:
        """``user``'s scenes: head revision, object count, last change and by whom."""
        rows = []
        book = await projects_of(self.bus).current()
        for head in await visible_heads(self.files, book, user, min(limit, MAX_LISTED_SCENES)):
            log = await self.files.revision_log(head.scene_id, limit=1)
            last = log[-1] if log else None
            found = await self.files.revision_inspection(head.scene_id)
            objects = len(artifacts.decode(found[1]).objects) if found else None
            rows.append(
                {
                    "scene_id": head.scene_id,
                    "revision": head.revision,
                    "scene_hash": head.scene_hash,
                    "objects": objects,
                    "changed_at": last.stored_at if last else None,
                    "changed_by": last.user if last else None,
                    "run_id": last.run_id if last else None,
                }
            )
        return rows

    async def show(self, scene_id: str, user: str) -> dict[str, Any]:
        """The artist's summary of ``user``'s scene at its head revision."""
        await self.own(scene_id, user)
        found = await self.files.revision_inspection(scene_id)
        if found is None:
            raise NoScene(f"scene {scene_id} has no inspection of its head revision yet")
        return scene_report(artifacts.decode(found[1]))

    async def history(
        self, scene_id: str, user: str, limit: int = MAX_LISTED_REVISIONS
    ) -> list[RevisionEntry]:
        """The newest revisions of ``user``'s scene with their runs, oldest first."""
        await self.own(scene_id, user)
        return await self.files.revision_log(scene_id, min(limit, MAX_LISTED_REVISIONS))


def exported(settings: Settings) -> SceneExports:
    """The exported .blend files under the home, where people open and edit them."""
    # Straight from its adapter, which reads files and no store: the executor's client
    # would import every store with it (pyproject.toml allows this one import).
    from services.executor.adapters.exports import SceneExports

    return SceneExports(settings.scenes_dir)


def guard_export(
    settings: Settings,
    scene_id: str,
    choice: Choice | None,
    words: tuple[str, str] = ("--adopt", "--discard"),
) -> bool:
    """Before a run on ``scene_id`` is planned: True when the door must first import the
    exported file (``adopt``), False to go ahead (the file is as blendmesh wrote it, or
    ``discard``: a copy is kept beside it and the run may replace it). A file a person
    changed, with no choice made, raises ``SceneFileChanged`` naming ``words``."""
    files = exported(settings)
    changed = files.changed(scene_id)
    if changed is None:
        return False
    if choice == "discard":
        files.keep_aside(scene_id)
        return False
    if choice == "adopt":
        return True
    raise SceneFileChanged(scene_id, changed, *words)
