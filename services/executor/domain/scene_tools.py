"""The executor's own tools: ``scene.import`` and ``scene.revert`` (contracts/scene_files.py),
and ``scene.import_asset`` and ``scene.render_view`` (asset_tools.py).

Both replace the scene the bridge holds with a whole .blend file: a staged upload of the
run's user, or an earlier revision of the run's scene. The bridge cannot reach the store,
so the executor answers them itself: ``SceneToolBridge`` wraps the bridge for one run and
hands every other call through. Because the wrapper is the bridge the run's operations
see, a rollback that replays an import or a revert calls it again, like any tool.

The file is checked (a .blend, compressed or not), written to a private temporary file and
opened with ``bridge.load``, which never runs the file's scripts and refuses a file that
links a library or refers to an external file; the run's commit then makes the new
revision.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Protocol

import msgspec

from contracts.assets import ASSET_TOOL
from contracts.bridge import (
    INVALID_PARAMS,
    HashScheme,
    Preview,
    SavedScene,
    ToolErrorCode,
    ToolResult,
)
from contracts.exports import EXPORT_TOOL, ExportParams, SceneExported
from contracts.inspection import SceneInspection
from contracts.libraries import UPDATE_TOOL, libraries_problem, update_problem
from contracts.scene_files import IMPORT_TOOL, REVERT_TOOL, blend_problem, is_blob_id
from contracts.scenes import Head, SceneSummary
from contracts.views import VIEW_TOOL, AssetImported, AssetParams, ViewParams
from services.executor.domain.asset_tools import import_asset, render_view
from services.executor.domain.export_tools import export_scene
from services.executor.domain.library_imports import publish_libraries, publish_linked, relink
from services.executor.domain.library_shelf import LibraryShelf, project_for
from services.executor.domain.ports import Bridge, BridgeCrashed, BridgeError
from services.runtime.nats.objects import ObjectTooLarge


class Revisions(Protocol):
    """Port: a scene's stored revisions (JetStreamSceneStore)."""

    async def find_revision(self, scene_id: str, revision: int) -> Head | None: ...

    async def fetch(self, head: Head, dest: Path) -> None: ...


class Uploads(Protocol):
    """Port: the staged uploads of the doors (ObjectStoreUploads), and the views staged
    for them."""

    async def get(self, user: str, blob: str, max_bytes: int) -> bytes | None: ...

    async def fetch(self, user: str, blob: str, dest: BinaryIO, max_bytes: int) -> bool: ...

    async def stage(self, user: str, data: bytes) -> str: ...


HEAD_BYTES = 1024 * 1024


def _refused(code: ToolErrorCode, message: str) -> ToolResult:
    """Refused before Blender was touched: the scene is as it was."""
    return ToolResult(ok=False, error_code=code, message=message, mutated=False)


@dataclass
class SceneTools:
    """What the tools read, and where their temporary files go; ``bind`` makes the bridge
    of one run."""

    revisions: Revisions
    uploads: Uploads
    work_dir: Path
    max_upload_bytes: int
    shelf: LibraryShelf | None = None  # where a shot's libraries are published and put

    def bind(self, bridge: Bridge, scene_id: str, user: str) -> SceneToolBridge:
        if self.shelf is not None:
            # A run's user owns its scene (the runner refuses any other): their project's.
            self.shelf.project = project_for(user)
        return SceneToolBridge(bridge, self, scene_id, user)


class SceneToolBridge:
    """The bridge of one run on ``scene_id`` for ``user``: the scene tools are answered
    here, everything else by the bridge."""

    def __init__(self, bridge: Bridge, tools: SceneTools, scene_id: str, user: str) -> None:
        self.inner = bridge
        self._tools = tools
        self.scene_id = scene_id
        self.user = user

    @property
    def generation(self) -> int:
        return self.inner.generation

    async def call_tool(
        self, name: str, arguments: dict[str, Any], mcp_call_id: str, timeout: float | None = None
    ) -> ToolResult:
        if name == IMPORT_TOOL:
            return await self._import(arguments)
        if name == REVERT_TOOL:
            return await self._revert(arguments)
        if name == UPDATE_TOOL:
            return await self._update_library(arguments)
        tools = self._tools
        if name == ASSET_TOOL:
            work = tools.work_dir
            limit = tools.max_upload_bytes
            return await import_asset(self, tools.uploads, work, limit, self.user, arguments)
        if name == VIEW_TOOL:
            return await render_view(self, tools.uploads, tools.work_dir, self.user, arguments)
        if name == EXPORT_TOOL:
            work, limit = tools.work_dir, tools.max_upload_bytes
            return await export_scene(self, tools.uploads, work, limit, self.user, arguments)
        return await self.inner.call_tool(name, arguments, mcp_call_id, timeout)

    async def _import(self, args: dict[str, Any]) -> ToolResult:
        blob, size = args.get("blob"), args.get("bytes")
        known = set(args) in ({"blob", "bytes"}, {"blob", "bytes", "libraries"})
        if not known or not is_blob_id(blob) or not isinstance(size, int):
            return _refused(
                "invalid_input",
                'scene.import takes {"blob": "sha256:<64 hex digits>", "bytes": <size>} '
                'naming a staged upload, and "libraries" naming the staged libraries it '
                "links; stage the file with `blendmesh scenes import`",
            )
        staged = args.get("libraries", {})
        problem = libraries_problem(staged)
        if problem is not None:
            return _refused("invalid_input", problem)
        if staged and self._tools.shelf is None:
            return _refused("invalid_input", "this executor keeps no libraries")
        limit = self._tools.max_upload_bytes
        if not 0 < size <= limit:
            return _refused(
                "invalid_input",
                f"scene.import of {size} bytes: an import holds 1 to {limit} bytes "
                "(BLENDMESH_MAX_UPLOAD_BYTES)",
            )
        assert isinstance(blob, str)
        # Streamed from the store into the file Blender opens: memory holds a batch of
        # chunks, never the scene, and the file is written once.
        path = await asyncio.to_thread(_private_file, self._tools.work_dir)
        try:
            refusal = await self._fetch(blob, size, path)
        except BaseException:
            await asyncio.to_thread(path.unlink, missing_ok=True)
            raise
        if refusal is None and self._tools.shelf is not None:
            try:
                refusal = await publish_libraries(
                    self._tools.shelf, self._tools.uploads, self.user, staged, path
                )
            except BaseException:
                await asyncio.to_thread(path.unlink, missing_ok=True)
                raise
        if refusal is not None:
            await asyncio.to_thread(path.unlink, missing_ok=True)
            return refusal
        return await self._load_file(path, f"the upload {blob[:19]}…")

    async def _fetch(self, blob: str, size: int, path: Path) -> ToolResult | None:
        """Write the upload ``blob`` to ``path``; a refusal when there is none of the
        run's user or it does not hold the ``size`` bytes the plan says."""
        with await asyncio.to_thread(path.open, "wb") as out:
            try:
                found = await self._tools.uploads.fetch(self.user, blob, out, max_bytes=size)
            except ObjectTooLarge:
                return _refused(
                    "invalid_input", f"the upload holds more bytes than the plan says {size}"
                )
            held = out.tell()
        if not found:
            return _refused(
                "not_found",
                f"no staged upload {blob[:19]}… of {self.user}: uploads expire a day after "
                "they are staged; import the file again",
            )
        if held != size:
            return _refused("invalid_input", f"the upload holds {held} bytes, the plan says {size}")
        return None

    async def _update_library(self, args: dict[str, Any]) -> ToolResult:
        """Save the scene as it is, point its links to the library at the revision asked
        for, and open that: overridden properties keep the scene's values, the rest is the
        library revision's."""
        problem = update_problem(args)
        if problem is not None:
            return _refused("invalid_input", problem)
        shelf = self._tools.shelf
        project = shelf.project if shelf is not None else None
        name, revision = args["name"], args.get("revision")
        if shelf is None or project is None:
            return _refused("not_found", f"scene {self.scene_id} can link no libraries")
        if revision is not None and not await shelf.has(project, name, revision):
            return _refused(
                "not_found",
                f"library {name!r} of your project has no revision {revision}; "
                "`blendmesh libraries publish` publishes its next revision",
            )
        path = await asyncio.to_thread(_private_file, self._tools.work_dir)
        try:
            await self.inner.save(str(path))
            if revision is None:  # a staged .blend, published as the next revision first
                upload = {"blob": args["blob"], "bytes": args["bytes"]}
                found = await publish_linked(
                    shelf, self._tools.uploads, self.user, project, name, upload, path
                )
            else:
                found = revision
            refusal = found if isinstance(found, ToolResult) else None
            if isinstance(found, int):
                revision = found
                refusal = await relink(shelf, path, name, found)
        except BaseException:
            await asyncio.to_thread(path.unlink, missing_ok=True)
            raise
        if refusal is not None:
            await asyncio.to_thread(path.unlink, missing_ok=True)
            return refusal
        what = f"scene {self.scene_id} with library {name} at revision {revision}"
        loaded = await self._load_file(path, what)
        if not loaded.ok:
            return loaded
        # Which revision the scene links now: the one a publish made is known only here.
        data = {**(loaded.data or {}), "library": name, "revision": revision}
        return msgspec.structs.replace(loaded, data=data)

    async def _revert(self, args: dict[str, Any]) -> ToolResult:
        revision = args.get("revision")
        if set(args) != {"revision"} or not isinstance(revision, int) or revision < 1:
            return _refused(
                "invalid_input",
                'scene.revert takes {"revision": <a revision number, 1 or more>}',
            )
        head = await self._tools.revisions.find_revision(self.scene_id, revision)
        if head is None:
            return _refused(
                "not_found",
                f"scene {self.scene_id} has no revision {revision}; "
                f"`blendmesh scenes history {self.scene_id}` lists its revisions",
            )
        # Written from the store into the file Blender opens a window of chunks at a time:
        # the executor never holds the revision whole, however big the scene.
        path = await asyncio.to_thread(_private_file, self._tools.work_dir)
        try:
            await self._tools.revisions.fetch(head, path)
        except BaseException:
            await asyncio.to_thread(path.unlink, missing_ok=True)
            raise
        result = await self._load_file(path, f"revision {revision} of scene {self.scene_id}")
        scene_hash = (result.data or {}).get("scene_hash", "")
        if result.ok and not await self._is_revision(scene_hash, head.scene_hash):
            return ToolResult(
                ok=False,
                error_code="conflict",
                message=f"revision {revision} of scene {self.scene_id} loads as "
                f"{scene_hash[:16]}, not {head.scene_hash}; it was not reverted",
                mutated=True,
            )
        return result

    async def _is_revision(self, loaded: str, recorded: str) -> bool:
        """Whether the scene just loaded (hashing to ``loaded``) is the revision whose hash
        starts with ``recorded`` (a revision's object name keeps 16 characters of it). One
        committed before ADR 0012 recorded its whole-snapshot hash: that one is asked then."""
        if loaded.startswith(recorded):
            return True
        return (await self.inner.fingerprint_full("whole_snapshot")).startswith(recorded)

    async def _load_file(self, path: Path, what: str) -> ToolResult:
        """Open ``path``, a private file this removes, as the scene."""
        try:
            return await self._open(path, what)
        finally:
            await asyncio.to_thread(path.unlink, missing_ok=True)

    async def _open(self, path: Path, what: str) -> ToolResult:
        head, size = await asyncio.to_thread(_head, path)
        problem = blend_problem(head, what)
        if problem is not None:
            return _refused("invalid_input", problem)
        try:
            scene_hash = await self.inner.load(str(path))
        except BridgeCrashed:
            raise  # a dead bridge is the runner's to restart
        except Exception as exc:  # noqa: BLE001 - Blender refused the file: the tool failed
            # The bridge names the file by its last part: that of a private copy, here
            # replaced by what the user knows it as.
            said = str(exc).removeprefix("blendmesh/scene.load: ").replace(repr(path.name), what)
            if isinstance(exc, BridgeError) and exc.code == INVALID_PARAMS:
                return _refused("invalid_input", said)  # e.g. it links a library
            return ToolResult(
                ok=False,
                error_code="invalid_input",
                message=f"Blender could not open {what}: {said}",
                mutated=True,  # a half-opened file: the runner restores the checkpoint
            )
        return ToolResult(
            ok=True,
            data={"bytes": size, "scene_hash": scene_hash},
            mutated=True,
            determinism_class="deterministic",  # the same file loads as the same scene
        )

    # Everything else is the bridge's.
    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def reset(self) -> str:
        return await self.inner.reset()

    async def load(self, path: str) -> str:
        return await self.inner.load(path)

    async def save(self, path: str, compress: bool = False, checked: bool = True) -> SavedScene:
        return await self.inner.save(path, compress, checked)

    async def verify(self) -> str:
        return await self.inner.verify()

    async def summary(self, scene_id: str) -> SceneSummary:
        return await self.inner.summary(scene_id)

    async def fingerprint(self) -> str:
        return await self.inner.fingerprint()

    async def fingerprint_full(self, scheme: HashScheme = "digests") -> str:
        return await self.inner.fingerprint_full(scheme)

    async def render_preview(self, path: str, width: int = 320, height: int = 240) -> Preview:
        return await self.inner.render_preview(path, width, height)

    async def inspect(self) -> SceneInspection:
        return await self.inner.inspect()

    async def render_view(self, view: ViewParams) -> Preview:
        return await self.inner.render_view(view)

    async def import_asset(self, asset: AssetParams) -> AssetImported:
        return await self.inner.import_asset(asset)

    async def export_scene(self, want: ExportParams) -> SceneExported:
        return await self.inner.export_scene(want)

    async def restart(self) -> None:
        await self.inner.restart()


def _private_file(work_dir: Path) -> Path:
    """A new empty file only this process's user can read (mkstemp makes it 0600)."""
    work_dir.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=".import-", suffix=".blend", dir=work_dir)
    os.close(fd)
    return Path(name)


def _head(path: Path) -> tuple[bytes, int]:
    """The file's first bytes, enough for ``blend_problem`` to see a compressed .blend's
    header (a zstd or gzip block is far smaller), and its size."""
    with path.open("rb") as file:
        return file.read(HEAD_BYTES), os.fstat(file.fileno()).st_size
