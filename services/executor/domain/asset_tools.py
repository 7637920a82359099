"""The executor's answers to ``scene.import_asset`` and ``scene.render_view``.

Both need the store, which the bridge cannot reach, so ``SceneToolBridge`` hands them
here. An import reads the run user's staged upload, checks it (``contracts.assets``:
its format, and that it points at nothing outside itself), writes a private copy with
the ending Blender's importer expects and has the bridge import it. A view is rendered by
the bridge to a private file and staged for the run's user like an upload: a PNG is too
large for the run's events, so the receipt names it (``image``) and the door fetches it.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import uuid
from pathlib import Path
from typing import Any, Protocol

import jsonschema
import msgspec

from contracts.assets import ASSET_TOOL, asset_problem, collection_problem
from contracts.bridge import INVALID_PARAMS, ToolErrorCode, ToolResult
from contracts.scene_files import is_blob_id
from contracts.views import (
    DEFAULT_AZIMUTH,
    DEFAULT_ELEVATION,
    DEFAULT_SHADING,
    VIEW_SCHEMA,
    VIEW_TOOL,
    AssetParams,
    ViewParams,
    view_problem,
)
from services.executor.domain.ports import Bridge, BridgeCrashed, BridgeError
from services.runtime.nats.objects import ObjectTooLarge

_VIEW = jsonschema.Draft202012Validator(VIEW_SCHEMA)
_ASSET_ARGS = {"blob", "bytes", "format", "collection"}


class Staging(Protocol):
    """Port: files staged per user (ObjectStoreUploads): a door's uploads, the views."""

    async def get(self, user: str, blob: str, max_bytes: int) -> bytes | None: ...

    async def stage(self, user: str, data: bytes) -> str: ...


def _refused(code: ToolErrorCode, message: str, mutated: bool = False) -> ToolResult:
    return ToolResult(ok=False, error_code=code, message=message, mutated=mutated)


def _ok(data: dict[str, Any], mutated: bool) -> ToolResult:
    return ToolResult(ok=True, data=data, mutated=mutated)


def _private(work_dir: Path, data: bytes, name: str) -> Path:
    """``data`` as ``name`` in a new folder only this process's user can read (mkdtemp
    makes it 0700). Named for the collection, as an STL's one object is named for its file."""
    work_dir.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix=".asset-", dir=work_dir)) / name
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    return path


def _remove(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.parent.rmdir()


def _said(exc: Exception, method: str) -> str:
    return str(exc).removeprefix(f"blendmesh/{method}: ")


async def import_asset(
    bridge: Bridge,
    staging: Staging,
    work_dir: Path,
    limit: int,
    user: str,
    args: dict[str, Any],
) -> ToolResult:
    """Add ``user``'s staged asset to the collection ``args`` name."""
    blob, size, fmt = args.get("blob"), args.get("bytes"), args.get("format")
    if set(args) != _ASSET_ARGS or not is_blob_id(blob) or not isinstance(size, int):
        return _refused(
            "invalid_input",
            f'{ASSET_TOOL} takes {{"blob": "sha256:<64 hex>", "bytes": <size>, "format": '
            '"glb", "collection": "<name>"}; stage the file with `blendmesh scenes '
            "import-asset`",
        )
    problem = collection_problem(args["collection"])
    if problem is not None:
        return _refused("invalid_input", problem)
    if not 0 < size <= limit:
        return _refused(
            "invalid_input",
            f"{ASSET_TOOL} of {size} bytes: an import holds 1 to {limit} bytes "
            "(BLENDMESH_MAX_UPLOAD_BYTES)",
        )
    assert isinstance(blob, str)
    try:
        data = await staging.get(user, blob, max_bytes=size)
    except ObjectTooLarge:
        return _refused("invalid_input", f"the upload holds more bytes than the plan says {size}")
    if data is None:
        return _refused(
            "not_found",
            f"no staged upload {blob[:19]}… of {user}: uploads expire a day after they "
            "are staged; import the file again",
        )
    if len(data) != size:
        return _refused(
            "invalid_input", f"the upload holds {len(data)} bytes, the plan says {size}"
        )
    what = f"the upload {blob[:19]}…"
    problem = await asyncio.to_thread(asset_problem, data, str(fmt), what)
    if problem is not None:
        return _refused("invalid_input", problem)
    name = f"{args['collection']}.{fmt}"  # a collection name is never a path
    path = await asyncio.to_thread(_private, work_dir, data, name)
    try:
        params = msgspec.convert(
            {"path": str(path), "format": fmt, "collection": args["collection"]}, AssetParams
        )
        imported = await bridge.import_asset(params)
    except BridgeCrashed:
        raise  # a dead bridge is the runner's to restart
    except BridgeError as exc:
        said = _said(exc, "scene.import_asset").replace(path.name, what)
        # Whatever Blender read before it stopped is undone from the checkpoint.
        return _refused("invalid_input", said, mutated=True)
    finally:
        await asyncio.to_thread(_remove, path)
    return _ok(
        {"collection": imported.collection, "objects": imported.objects, "bytes": size},
        mutated=True,
    )


async def render_view(
    bridge: Bridge, staging: Staging, work_dir: Path, user: str, args: dict[str, Any]
) -> ToolResult:
    """Render the view ``args`` ask for and stage the PNG for ``user``; the receipt names
    it by its content address."""
    if not _VIEW.is_valid(args):
        error = jsonschema.exceptions.best_match(_VIEW.iter_errors(args))
        where = ".".join(str(p) for p in error.absolute_path) if error else ""
        return _refused(
            "invalid_input",
            f"{VIEW_TOOL}: argument {where or '(the arguments)'} is out of its schema; it "
            "takes width and height (64 to 2048), and a camera or azimuth/elevation",
        )
    problem = view_problem(args)
    if problem is not None:
        return _refused("invalid_input", f"{VIEW_TOOL}: {problem}")
    await asyncio.to_thread(work_dir.mkdir, parents=True, exist_ok=True)
    path = work_dir / f"view-{uuid.uuid4().hex}.png"
    view = ViewParams(
        path=str(path),
        width=args["width"],
        height=args["height"],
        azimuth=float(args.get("azimuth", DEFAULT_AZIMUTH)),
        elevation=float(args.get("elevation", DEFAULT_ELEVATION)),
        camera=args.get("camera"),
        shading=args.get("shading", DEFAULT_SHADING),
    )
    try:
        rendered = await bridge.render_view(view)
        png = await asyncio.to_thread(path.read_bytes)
    except BridgeCrashed:
        raise
    except BridgeError as exc:
        code: ToolErrorCode = "not_found" if exc.code == INVALID_PARAMS else "internal_error"
        return _refused(code, _said(exc, "scene.render_view"))
    finally:
        path.unlink(missing_ok=True)
    image = await staging.stage(user, png)
    data = {
        "image": image,
        "bytes": len(png),
        "width": rendered.width,
        "height": rendered.height,
        "engine": rendered.engine,
        "shading": view.shading,
    }
    return _ok(data, mutated=False)
