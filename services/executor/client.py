"""What the rest of blendmesh may read of the executor's data, and nothing else.

The executor owns the tool and node catalogs its bridge declares, the scene summaries, the scene
revisions and their previews. Other services and the doors (CLI, gateway) reach them only
through this module; import-linter holds that border (pyproject.toml).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path

from nats.js import JetStreamContext

from contracts import inspection as artifacts
from contracts.revisions import ChunkedRevision
from contracts.scene_report import RevisionEntry
from contracts.scenes import Head
from services.executor.adapters.catalog import KvCatalog, KvNodeCatalog
from services.executor.adapters.collector import Collected, Collector, retention_of
from services.executor.adapters.exports import SceneExports as ExportedScenes
from services.executor.adapters.libraries import (
    BlendFileLinks,
    StoredLibraries,
    library_prefix,
)
from services.executor.adapters.previews import ObjectStorePreviews
from services.executor.adapters.pushed_chunks import PushedChunks
from services.executor.adapters.render_budgets import under_way
from services.executor.adapters.renders import LoggedJobs, ObjectStoreFrames
from services.executor.adapters.scene_store import JetStreamSceneStore
from services.executor.adapters.scene_summaries import KvSceneSummaries
from services.executor.adapters.tags import KvSceneTags
from services.executor.adapters.uploads import ObjectStoreUploads
from services.executor.domain.chunking import RevisionDamaged
from services.executor.domain.ports import (
    INSPECTION_SUFFIX,
    CatalogSource,
    NodeCatalogSource,
    SceneSummaries,
)
from services.runtime.nats.objects import ObjectTooLarge

__all__ = [
    "CatalogSource",
    "Collected",
    "Collector",
    "ExportedScenes",
    "KvCatalog",
    "KvNodeCatalog",
    "KvSceneSummaries",
    "KvSceneTags",
    "LibraryFiles",
    "NodeCatalogSource",
    "ObjectStoreUploads",
    "PushedChunks",
    "RevisionDamaged",
    "SceneFiles",
    "SceneSummaries",
    "retention_of",
]


class LibraryFiles:
    """Read side of the projects' library revisions, and of the library paths a .blend
    stores: what a download of a shot brings along (ADR 0060)."""

    def __init__(self, js: JetStreamContext, prefix: str) -> None:
        self._libraries = StoredLibraries(JetStreamSceneStore(js, library_prefix(prefix)))
        self.links = BlendFileLinks()

    async def fetch(self, project: str, name: str, revision: int, dest: Path) -> bool:
        """Write the revision to ``dest``; False when the project has no such revision."""
        return await self._libraries.fetch(project, name, revision, dest)

    async def listing(self, project: str) -> list[tuple[str, int, str]]:
        """(name, revision, content hash prefix) of each of ``project``'s library revisions."""
        return await self._libraries.listing(project)


class SceneFiles:
    """Read side of a scene's revisions: its head, the head's .blend bytes, its preview, and
    each revision's inspection artifact (what the guardians read)."""

    def __init__(self, js: JetStreamContext, prefix: str) -> None:
        self._scenes = JetStreamSceneStore(js, prefix)
        self._previews = ObjectStorePreviews(js, prefix)

    async def head(self, scene_id: str) -> Head | None:
        return await self._scenes.head(scene_id)

    async def blend(self, head: Head) -> bytes:
        """The .blend of ``head``, read into memory without touching the disk."""
        return await self._scenes.read(head)

    async def find_revision(self, scene_id: str, revision: int) -> Head | None:
        """Revision ``revision`` of ``scene_id`` as a head to read it by (its owner is the
        scene head's to ask)."""
        return await self._scenes.find_revision(scene_id, revision)

    async def fetch(self, head: Head, dest: Path) -> None:
        """Write ``head``'s .blend to ``dest``, a window of chunks at a time."""
        await self._scenes.fetch(head, dest)

    async def manifest(self, head: Head) -> ChunkedRevision | None:
        """The chunks ``head``'s revision is made of, to read it a few at a time (a reader
        of revisions: ``services/doors/core/revision_reader.py``); None for a revision
        stored whole, which ``blend`` reads. Raises ``RevisionDamaged`` for a manifest
        that does not decode."""
        try:
            return await self._scenes.manifest(head.object_name)
        except ObjectTooLarge:  # larger than any manifest: a whole file from before chunks
            return None

    async def chunks(self, space: str, digests: Iterable[str]) -> dict[str, bytes | None]:
        """The bytes of the chunks ``digests`` of ``space`` (a manifest's), as the chunk
        store gives them back; None for one it lacks. Unverified: the caller hashes them."""
        return await self._scenes.chunks.read(space, digests)

    async def owner(self, scene_id: str) -> str | None:
        """The user who owns ``scene_id``; None for a scene nobody has committed yet."""
        head = await self._scenes.head(scene_id)
        return head.owner if head is not None else None

    async def preview(self, scene_id: str) -> bytes | None:
        return await self._previews.get(scene_id)

    async def revision_preview(self, scene_id: str, revision: int) -> bytes | None:
        """The picture of one recent revision; None when it was never rendered (a newer
        commit came first) or has fallen out of the kept window."""
        return await self._previews.get_revision(scene_id, revision)

    async def revision_model(self, scene_id: str, revision: int) -> bytes | None:
        """One recent revision as binary glTF (GLB), as its picture was rendered."""
        return await self._previews.get_model(scene_id, revision)

    async def scenes_of(self, user: str, limit: int = 200) -> list[Head]:
        """The heads of the scenes ``user`` owns, by scene id (at most ``limit``)."""
        ids = sorted({scene for scene, _, _ in await self._scenes.revisions()})
        heads = await asyncio.gather(*(self._scenes.head(scene) for scene in ids))
        return [h for h in heads if h is not None and h.owner == user][:limit]

    async def history(self, scene_id: str) -> list[tuple[int, str]]:
        """(revision, hash prefix) of every stored revision of ``scene_id``, oldest first."""
        return [(n, d) for s, n, d in await self._scenes.revisions() if s == scene_id]

    async def revision_log(self, scene_id: str, limit: int = 100) -> list[RevisionEntry]:
        """The newest ``limit`` revisions of ``scene_id``, oldest first, each with the run
        that committed it as its inspection artifact records it."""
        dated = (await self._scenes.dated_revisions(scene_id))[-limit:]
        documents = await asyncio.gather(
            *(
                self._scenes.read_inspection(f"{scene_id}/{n:08d}-{digest}{INSPECTION_SUFFIX}")
                for n, digest, _ in dated
            )
        )
        entries = []
        for (n, digest, at), data in zip(dated, documents, strict=True):
            run = artifacts.decode(data).run if data else None
            entries.append(
                RevisionEntry(
                    revision=n,
                    scene_hash_prefix=digest,
                    stored_at=at,
                    run_id=run.run_id if run else None,
                    user=run.user if run else None,
                    approved_by=run.approved_by if run else None,
                    tools=[op.tool_name for op in run.operations] if run else [],
                )
            )
        return entries

    async def revision_inspection(
        self, scene_id: str, revision: int | None = None
    ) -> tuple[int, bytes] | None:
        """The inspection artifact of a revision of ``scene_id`` (its head when None), with
        that revision's number; None when there is no such revision or artifact."""
        if revision is None:
            head = await self._scenes.head(scene_id)
            if head is None:
                return None
            revision = head.revision
            name = await self._scenes.inspection(head)
        else:
            name = await self._scenes.find_inspection(scene_id, revision)
        data = await self._scenes.read_inspection(name) if name else None
        return (revision, data) if data is not None else None

    async def inspection(self, object_name: str) -> bytes | None:
        """The inspection artifact ``Executed.inspection`` names (``contracts.inspection``
        decodes it); None when there is no such artifact."""
        return await self._scenes.read_inspection(object_name)


class RenderFrames:
    """Read side of render jobs' frames: a frame's PNG by its user and content hash (the
    caller has checked that the job, hence the user, is the asker's)."""

    def __init__(self, js: JetStreamContext, prefix: str) -> None:
        self._frames = ObjectStoreFrames(js, prefix)

    async def get(self, user: str, sha256: str) -> bytes | None:
        return await self._frames.get(f"{user}/{sha256}.png")


async def render_cost_under_way(js: JetStreamContext, prefix: str, user: str) -> int:
    """What ``user``'s render jobs under way cost (their budget's use, docs/renders.md)."""
    return await under_way(js, prefix, user, LoggedJobs(js, prefix).stopped)
