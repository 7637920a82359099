"""What every door shares for the tools LLM hosts expect: inspect one object, render a
view, import an asset file (contracts/views.py, contracts/assets.py).

Each is a run of one operation, so policy, approval rules, the log and the audit apply as
to any plan; the door builds the request here, submits it like any other, and reads the
answer from the operation's receipt. Reads need the scene to be the caller's (another
user's answers like a missing one); an import may start a new scene, which becomes theirs.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from contracts.assets import (
    AssetFormat,
    asset_problem,
    collection_problem,
    extension_problem,
    format_of,
    import_asset_plan,
)
from contracts.events import RunRequested
from contracts.exports import export_plan, export_problem
from contracts.receipts import RunResult
from contracts.scene_files import is_blob_id
from contracts.views import DEFAULT_SHADING, Shading, inspect_plan, view_plan, view_problem
from services.doors.core.client import ClientError
from services.doors.core.requests import build_request, new_id
from services.doors.core.scene_client import NoScene, SceneDoor, UploadTooLarge
from services.executor.client import ObjectStoreUploads

ASSET_WHAT = "the asset file"


class AssetRefused(ClientError):
    """An asset file or collection name no import takes (HTTP 422): its message says
    what was wrong and what to do."""


class NoUpload(ClientError):
    """The named upload is not the caller's: never staged, expired, or another user's."""


class BadView(ClientError):
    """A view no render takes (HTTP 422)."""


class BadExport(ClientError):
    """A format no export writes (HTTP 422)."""


def check_asset(data: bytes, filename: str, collection: str, limit: int) -> AssetFormat:
    """The asset's format once the file and the collection are fit to import; raises
    ``UploadTooLarge`` or ``AssetRefused`` otherwise. CPU-bound on a large glTF."""
    problem = extension_problem(filename) or collection_problem(collection)
    if problem is not None:
        raise AssetRefused(problem)
    if len(data) > limit:
        raise UploadTooLarge(
            f"{ASSET_WHAT} holds {len(data)} bytes, more than the {limit} an import takes "
            "(BLENDMESH_MAX_UPLOAD_BYTES); decimate or compress it, or raise the limit"
        )
    fmt = format_of(filename)
    assert fmt is not None  # extension_problem said so
    problem = asset_problem(data, fmt, ASSET_WHAT)
    if problem is not None:
        raise AssetRefused(problem)
    return fmt


def operation_result(result: RunResult) -> dict[str, Any] | None:
    """What the run's one operation answered, once it succeeded; None otherwise."""
    done = [r for r in result.receipts if r.status in ("succeeded", "skipped_idempotent")]
    return done[0].result if done else None


@dataclass
class SceneLooks:
    """The three requests for one mesh, as any user a door authenticated."""

    scenes: SceneDoor

    async def inspect_request(self, user: str, scene_id: str, name: str) -> RunRequested:
        await self.scenes.own(scene_id, user)
        return build_request(user=user, scene_id=scene_id, plan=inspect_plan(new_id("req"), name))

    async def view_request(
        self,
        user: str,
        scene_id: str,
        width: int,
        height: int,
        azimuth: float | None = None,
        elevation: float | None = None,
        camera: str | None = None,
        shading: Shading = DEFAULT_SHADING,
    ) -> RunRequested:
        plan = view_plan(new_id("req"), width, height, azimuth, elevation, camera, shading)
        problem = view_problem(plan["operations"][0]["args"])
        if problem is not None:
            raise BadView(problem)
        await self.scenes.own(scene_id, user)
        return build_request(user=user, scene_id=scene_id, plan=plan)

    async def export_request(self, user: str, scene_id: str, fmt: str) -> RunRequested:
        """The run that exports ``user``'s scene as ``fmt`` (glb, fbx, obj, usd, stl)."""
        problem = export_problem(fmt)
        if problem is not None:
            raise BadExport(problem)
        await self.scenes.own(scene_id, user)
        return build_request(user=user, scene_id=scene_id, plan=export_plan(new_id("req"), fmt))

    async def download(self, user: str, result: RunResult) -> bytes | None:
        """The file a completed export run staged for ``user``; None when there is none."""
        answered = operation_result(result) or {}
        blob = answered.get("file")
        if result.status != "completed" or not is_blob_id(blob):
            return None
        return await self._uploads.get(user, str(blob), self.scenes.settings.max_upload_bytes)

    async def asset_request(
        self,
        user: str,
        scene_id: str,
        data: bytes,
        filename: str,
        collection: str,
        pre_approved: bool = False,
    ) -> RunRequested:
        """Stage ``data`` and build the run that imports it into ``collection``: a new scene
        becomes ``user``'s; an existing one must be theirs already."""
        limit = self.scenes.settings.max_upload_bytes
        fmt = await asyncio.to_thread(check_asset, data, filename, collection, limit)
        if await self.scenes.files.head(scene_id) is not None:
            await self.scenes.own(scene_id, user)
        blob = await self._uploads.stage(user, data)
        plan = import_asset_plan(new_id("req"), blob, len(data), fmt, collection)
        return build_request(user=user, scene_id=scene_id, plan=plan, pre_approved=pre_approved)

    async def stage(self, user: str, data: bytes) -> str:
        """Keep ``data`` for ``user`` to name later (``staged``), for a door whose own
        messages cannot carry a file this large; returns its blob id."""
        limit = self.scenes.settings.max_upload_bytes
        if len(data) > limit:
            raise UploadTooLarge(
                f"the file is {len(data)} bytes, over the {limit} a staged upload may hold "
                "(BLENDMESH_MAX_UPLOAD_BYTES)"
            )
        return await self._uploads.stage(user, data)

    async def staged(self, user: str, blob: str) -> bytes:
        """The bytes ``user`` staged as ``blob``; ``NoUpload`` when they staged none such
        (another user's upload answers the same, so ids cannot be probed)."""
        limit = self.scenes.settings.max_upload_bytes
        data = await self._uploads.get(user, blob, limit) if is_blob_id(blob) else None
        if data is None:
            raise NoUpload(
                f"no upload {blob} of yours; stage the file with POST /api/uploads (it "
                "keeps a day) and name the blob it answers"
            )
        return data

    @property
    def _uploads(self) -> ObjectStoreUploads:
        return ObjectStoreUploads(self.scenes.bus.js, self.scenes.bus.prefix)

    async def image(self, user: str, result: RunResult) -> bytes | None:
        """The PNG a completed view run staged for ``user``; None when there is none."""
        answered = operation_result(result) or {}
        blob = answered.get("image")
        if result.status != "completed" or not is_blob_id(blob):
            return None
        return await self._uploads.get(user, str(blob))


__all__ = [
    "AssetRefused",
    "BadExport",
    "BadView",
    "NoScene",
    "NoUpload",
    "SceneLooks",
    "check_asset",
    "operation_result",
]
