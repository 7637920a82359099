"""One run's hold on one scene: lease, head revision loaded into the bridge, fenced commit."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from pathlib import Path

from contracts.errors import BlendmeshError
from contracts.scenes import Head
from services.executor.domain.ports import Bridge, Exports, Lease, LeaseLost, Leases, SceneStore

log = logging.getLogger("blendmesh.executor")


class RevisionCorrupt(BlendmeshError):
    """A stored revision does not hash to what its head says."""


async def hashes_to(bridge: Bridge, loaded: str, expected: str) -> bool:
    """True when the scene the bridge just loaded (hashing to ``loaded``) is the one whose
    hash a head records as ``expected``. Revisions committed before the hash combined
    per-datablock digests record the whole-snapshot hash: that one is asked for then, so
    they still load (ADR 0012)."""
    if loaded == expected:
        return True
    return await bridge.fingerprint_full("whole_snapshot") == expected


@dataclass
class SceneSession:
    scene_id: str
    lease: Lease
    head: Head | None
    start_hash: str  # the scene as loaded: the run-level rollback point
    checkpoint: Path | None  # the head revision's file (None: the empty scene)
    # The head's hash as the bridge computes it now; differs from head.scene_hash only for
    # a revision committed before ADR 0012, whose head records the whole-snapshot hash.
    head_hash: str = ""
    lost: bool = False
    renewer: asyncio.Task[None] | None = field(default=None, repr=False)


@dataclass
class Scenes:
    store: SceneStore
    leases: Leases
    files: Exports
    work_dir: Path
    bridge: Bridge
    loaded: tuple[str, int, str] | None = None  # (scene, revision, hash) the bridge holds
    # Sessions open now: while one is, the bridge holds a run's unsaved scene and must not
    # be stopped for idling, however long the run waits between calls (ADR 0033).
    open_sessions: int = 0

    async def open(self, scene_id: str) -> SceneSession:
        """Take the lease (``LeaseHeld`` if busy) and load the head revision."""
        lease = await self.leases.acquire(scene_id)
        try:
            head = await self.store.head(scene_id)
            checkpoint, scene_hash = await self._load(scene_id, head)
        except BaseException:
            await self.leases.release(lease)
            raise
        session = SceneSession(scene_id, lease, head, scene_hash, checkpoint, head_hash=scene_hash)
        session.renewer = asyncio.create_task(self._renew(session))
        self.open_sessions += 1
        return session

    def revision_path(self, scene_id: str, revision: int) -> Path:
        """Where this executor keeps its copy of a revision's .blend (scratch space)."""
        return self.work_dir / "revisions" / f"{scene_id}-{revision:08d}.blend"

    async def _load(self, scene_id: str, head: Head | None) -> tuple[Path | None, str]:
        if head is None:
            self.loaded = None
            return None, await self.bridge.reset()
        path = self.revision_path(scene_id, head.revision)
        if self.loaded is not None and self.loaded[:2] == (scene_id, head.revision):
            # The bridge still holds this revision from the last run: skip the reload.
            held = self.loaded[2]
            with contextlib.suppress(Exception):
                if await self.bridge.fingerprint() == held and path.exists():
                    return path, held
        if not path.exists():
            await self.store.fetch(head, path)
        scene_hash = await self.bridge.load(str(path))
        if not await hashes_to(self.bridge, scene_hash, head.scene_hash):
            raise RevisionCorrupt(
                f"revision {head.revision} of scene {scene_id} hashes to {scene_hash[:12]}, "
                f"not {head.scene_hash[:12]}"
            )
        self.loaded = (scene_id, head.revision, scene_hash)
        return path, scene_hash

    async def _renew(self, session: SceneSession) -> None:
        interval = max(getattr(self.leases, "ttl", 30.0) / 3, 0.05)
        while True:
            await asyncio.sleep(interval)
            try:
                session.lease = await self.leases.renew(session.lease)
            except LeaseLost:
                session.lost = True
                log.error("lost the lease on scene %s", session.scene_id)
                return
            except Exception as exc:  # noqa: BLE001 - e.g. reconnecting: try again next tick
                log.warning("renewing the lease on %s failed: %s", session.scene_id, exc)

    def writes(self, session: SceneSession, scene_hash: str) -> bool:
        """Whether committing ``scene_hash`` stores a new revision (the scene changed)."""
        head = session.head
        unchanged = scene_hash in (head.scene_hash, session.head_hash) if head else False
        return not (unchanged and session.checkpoint)

    async def commit(
        self,
        session: SceneSession,
        scene_hash: str,
        owner: str,
        saved: asyncio.Event | None = None,
    ) -> Path:
        """Store the bridge's scene as the new head (unless unchanged) and export it;
        ``saved`` is set once the bridge has written the file and is free again."""
        if not self.writes(session, scene_hash):
            assert session.checkpoint is not None
            return self.files.export(session.checkpoint, session.scene_id)
        head = session.head
        if session.lost:
            raise LeaseLost(f"the lease on scene {session.scene_id} expired during the run")
        # The renewal fences a stale writer; it needs only to be done before the store's
        # compare-and-set, so it runs while Blender writes the file.
        renewal = asyncio.ensure_future(self.leases.renew(session.lease))
        path = self.work_dir / "revisions" / f".{session.scene_id}-new.blend"
        try:
            # Compressed: Blender writes zstd in independent frames, so content-defined
            # chunks still follow the change, and after a reload far fewer bytes move than
            # in an uncompressed file (bench/big_scene.py measures both; ADR 0021).
            written = await self.bridge.save(str(path), compress=True)
        finally:
            session.lease = await renewal  # raises LeaseLost, also after a failed save
        if saved is not None:
            saved.set()
        if written.hash != scene_hash:
            raise RevisionCorrupt(f"the saved scene hashes to {written.hash}, not {scene_hash}")
        new = await self.store.commit(
            session.scene_id, path, scene_hash, head, session.lease.epoch, owner=owner
        )
        final = path.with_name(f"{session.scene_id}-{new.revision:08d}.blend")
        path.replace(final)
        if session.checkpoint is not None and session.checkpoint != final:
            session.checkpoint.unlink(missing_ok=True)  # the store keeps every revision
        session.head, session.checkpoint, session.head_hash = new, final, scene_hash
        self.loaded = (session.scene_id, new.revision, scene_hash)
        return self.files.export(final, session.scene_id)

    async def close(self, session: SceneSession) -> None:
        self.open_sessions -= 1
        if session.renewer is not None:
            session.renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await session.renewer
        if not session.lost:
            with contextlib.suppress(Exception):
                await self.leases.release(session.lease)
