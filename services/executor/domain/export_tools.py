"""The executor's answer to ``scene.export`` (contracts/exports.py).

The bridge cannot reach the store, so ``SceneToolBridge`` hands the call here: the bridge
writes the file into the executor's private work folder under a name chosen here, never
a caller's, and the bytes are staged for the run's user like an upload. A download is
too large for the run's events, so the receipt names it (``file``) and the door fetches it.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any, Protocol

from contracts.bridge import INVALID_PARAMS, ToolErrorCode, ToolResult
from contracts.exports import EXPORT_TOOL, FORMATS, ExportParams, SceneExported, export_problem

from .ports import BridgeCrashed, BridgeError


class Exporting(Protocol):
    """Port: the bridge of one run, which writes the scene as a file."""

    async def export_scene(self, want: ExportParams) -> SceneExported: ...


class Staging(Protocol):
    """Port: files staged per user (ObjectStoreUploads)."""

    async def stage(self, user: str, data: bytes) -> str: ...


def _refused(code: ToolErrorCode, message: str) -> ToolResult:
    return ToolResult(ok=False, error_code=code, message=message, mutated=False)


async def export_scene(
    bridge: Exporting,
    staging: Staging,
    work_dir: Path,
    limit: int,
    user: str,
    args: dict[str, Any],
) -> ToolResult:
    """Export the scene as ``args['format']`` and stage the file for ``user``."""
    if set(args) != {"format"}:
        return _refused(
            "invalid_input",
            f'{EXPORT_TOOL} takes {{"format": "glb"}} and nothing else (one of '
            f"{', '.join(sorted(FORMATS))})",
        )
    problem = export_problem(args["format"])
    if problem is not None:
        return _refused("invalid_input", f"{EXPORT_TOOL}: {problem}")
    fmt = args["format"]
    await asyncio.to_thread(work_dir.mkdir, parents=True, exist_ok=True)
    path = work_dir / f"export-{uuid.uuid4().hex}{FORMATS[fmt][0]}"
    try:
        want = ExportParams(path=str(path), format=fmt, max_bytes=limit)
        written = await bridge.export_scene(want)
        data = await asyncio.to_thread(path.read_bytes)
    except BridgeCrashed:
        raise  # a dead bridge is the runner's to restart
    except BridgeError as exc:
        code: ToolErrorCode = "invalid_input" if exc.code == INVALID_PARAMS else "internal_error"
        said = str(exc).removeprefix(f"blendmesh/{EXPORT_TOOL}: ").replace(str(path), path.name)
        return _refused(code, f"{said} (BLENDMESH_MAX_UPLOAD_BYTES bounds a download)")
    finally:
        await asyncio.to_thread(path.unlink, missing_ok=True)
    staged = await staging.stage(user, data)
    answer = {"file": staged, "bytes": len(data), "format": fmt, "objects": written.objects}
    return ToolResult(ok=True, data=answer, mutated=False)
