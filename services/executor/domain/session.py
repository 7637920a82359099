"""One run's hold on one scene: lease, head revision loaded into the bridge, fenced commit.

Between runs the executor may keep holding the scene its Blender has loaded, as an idle
"warm" lease (ADR 0037), so the next run on that scene comes to it and skips the reload.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from contracts.errors import BlendmeshError
from contracts.scenes import Head
from services.executor.domain.library_shelf import LibraryShelf, project_for
from services.executor.domain.ports import (
    Bridge,
    Discard,
    Exports,
    Lease,
    LeaseHeld,
    LeaseLost,
    Leases,
    SceneStore,
    StagedExport,
    unlink_now,
)

log = logging.getLogger("blendmesh.executor")

# A run deferred to the executor that holds its scene warm comes back this soon: that
# executor is idle and takes it at once. Each deferral is a delivery, counted against the
# consumer's max_deliver: over TAKEOVER_AFTER, some thirty of them at most.
WARM_RETRY = 0.1
# How long a run defers to a live warm holder before taking the scene over: the holder
# may be unable to pull it (a stuck consumer), and a run must never starve.
TAKEOVER_AFTER = 3.0
DEFERRALS_KEPT = 256  # warm holds whose first deferral an executor remembers, at most


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
    # The bridge's process (``Bridge.generation``) that holds the run's scene: another
    # one holds none of it, so each call checks this before it counts.
    generation: int = 0
    lost: bool = False
    renewer: asyncio.Task[None] | None = field(default=None, repr=False)
    # One renewal at a time: two renewals of the same lease revision race, and the loser
    # would read as the lease taken over by another executor.
    renewing: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)


@dataclass
class WarmHold:
    """The idle lease kept on the scene the bridge holds, renewed by ``keeper``."""

    lease: Lease
    until: float  # when the warm window closes, on the scenes' clock
    keeper: asyncio.Task[None] | None = field(default=None, repr=False)


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
    # Seconds the scene is held warm after a run (ADR 0037); 0: released at once.
    warm_for: float = 0.0
    takeover_after: float = TAKEOVER_AFTER
    # Whether the bridge still holds what it loaded: a Blender stopped for idling holds
    # nothing, so its warm hold is worth nothing.
    holds_scene: Callable[[], bool] = lambda: True
    clock: Callable[[], float] = time.monotonic
    warm: WarmHold | None = None
    # (scene, warm holder, its epoch) -> when this executor first deferred a run to it.
    deferred: dict[tuple[str, str, int], float] = field(default_factory=dict)
    closing: bool = False  # shutting down: no new warm hold
    # Puts a shot's library revisions beside it before each load (ADR 0060); told here
    # whose project the scene being loaded is.
    shelf: LibraryShelf | None = None
    # Deletes the checkpoint a commit replaces: a big scene's took 50-90 ms to delete, on
    # the event loop (adapters/trash.py).
    discard: Discard = unlink_now

    async def open(self, scene_id: str) -> SceneSession:
        """Take the lease (``LeaseHeld`` if busy, or held warm by another executor that
        should take the run) and load the head revision."""
        lease = await self._take(scene_id)
        try:
            # The bridge holds one scene: a warm hold on another is worth nothing now.
            await self.cool()
            head = await self.store.head(scene_id)
            checkpoint, scene_hash = await self._load(scene_id, head)
            # After: a Blender stopped for idling is started again by the load itself.
            generation = self.bridge.generation
        except BaseException:
            await self.leases.release(lease)
            raise
        session = SceneSession(
            scene_id,
            lease,
            head,
            scene_hash,
            checkpoint,
            head_hash=scene_hash,
            generation=generation,
        )
        session.renewer = asyncio.create_task(self._renew(session))
        self.open_sessions += 1
        return session

    async def _take(self, scene_id: str) -> Lease:
        warm = self.warm
        if warm is not None and warm.lease.scene_id == scene_id:
            # Our own warm hold: the acquire below turns it into the run's lease, and no
            # renewal may race it.
            self.warm = None
            await _stop(warm.keeper)
            with contextlib.suppress(LeaseLost):  # changed since: acquired as usual below
                return await self.leases.retake(warm.lease)
        try:
            return await self.leases.acquire(scene_id)
        except LeaseHeld as held:
            if not held.idle:
                raise
            if not self._waited_out(held):
                raise LeaseHeld(scene_id, held.owner, WARM_RETRY, True, held.epoch) from None
            holder = held.owner
        lease = await self.leases.acquire(scene_id, take_idle=True)
        log.warning(
            "took scene %s over from %s, which held it warm but did not take its run within %g s",
            scene_id,
            holder,
            self.takeover_after,
        )
        return lease

    def _waited_out(self, held: LeaseHeld) -> bool:
        """Whether runs on ``held``'s scene have deferred to its warm holder for long
        enough, counted from the first deferral this executor made to that hold."""
        now = self.clock()
        key = (held.scene_id, held.owner, held.epoch)
        first = self.deferred.get(key)
        if first is None:
            horizon = now - 10 * self.takeover_after  # older ones were answered long ago
            for old in [k for k, t in self.deferred.items() if t < horizon]:
                del self.deferred[old]
            while len(self.deferred) >= DEFERRALS_KEPT:
                del self.deferred[next(iter(self.deferred))]
            self.deferred[key] = first = now
        if now - first < self.takeover_after:
            return False
        del self.deferred[key]
        return True

    def revision_path(self, scene_id: str, revision: int) -> Path:
        """Where this executor keeps its copy of a revision's .blend (scratch space)."""
        return self.work_dir / "revisions" / f"{scene_id}-{revision:08d}.blend"

    async def _load(self, scene_id: str, head: Head | None) -> tuple[Path | None, str]:
        if head is None:
            self.loaded = None
            return None, await self.bridge.reset()
        if self.shelf is not None:
            self.shelf.project = project_for(head.owner)
        path = self.revision_path(scene_id, head.revision)
        if self.loaded is not None and self.loaded[:2] == (scene_id, head.revision):
            # The bridge still holds this revision from the last run: skip the reload.
            held = self.loaded[2]
            with contextlib.suppress(Exception):
                if await self.bridge.fingerprint() == held and path.exists():
                    log.info("revision %d of scene %s is still loaded", head.revision, scene_id)
                    return path, held
        if not path.exists():
            await self.store.fetch(head, path)
        self.loaded = None  # until the load is verified, the bridge holds nothing known
        scene_hash = await self.bridge.load(str(path))
        log.info("loaded revision %d of scene %s into Blender", head.revision, scene_id)
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
                await self._renew_once(session)
            except LeaseLost:
                session.lost = True
                log.error("lost the lease on scene %s", session.scene_id)
                return
            except Exception as exc:  # noqa: BLE001 - e.g. reconnecting: try again next tick
                log.warning("renewing the lease on %s failed: %s", session.scene_id, exc)

    async def _renew_once(self, session: SceneSession) -> None:
        async with session.renewing:
            session.lease = await self.leases.renew(session.lease)

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
            return await asyncio.to_thread(self.files.export, session.checkpoint, session.scene_id)
        head = session.head
        if session.lost:
            raise LeaseLost(f"the lease on scene {session.scene_id} expired during the run")
        # The renewal fences a stale writer; it needs only to be done before the store's
        # compare-and-set, so it runs while Blender writes the file.
        renewal = asyncio.ensure_future(self._renew_once(session))
        path = self.work_dir / "revisions" / f".{session.scene_id}-new.blend"
        try:
            # Uncompressed: Blender's compression was most of a big scene's save, and the
            # store packs each new chunk itself (ADR 0035).
            written = await self.bridge.save(str(path), compress=False, checked=False)
        finally:
            await renewal  # raises LeaseLost, also after a failed save
        if written.hash != scene_hash:
            raise RevisionCorrupt(f"the saved scene hashes to {written.hash}, not {scene_hash}")
        # Blender hashes the scene in full while the file is cut and stored, and the head
        # moves only once that hash agrees (ADR 0038). Asked before ``saved`` is set, so the
        # bridge answers it before describing the revision.
        verified = asyncio.ensure_future(self.bridge.verify())
        if saved is not None:
            saved.set()

        async def check() -> None:
            full = await verified
            if full != scene_hash:
                raise RevisionCorrupt(f"the saved scene hashes to {full}, not {scene_hash}")

        # The user's copy is written while the store takes the revision (both only read
        # the file), and put in place only once the revision is stored.
        staging = asyncio.ensure_future(asyncio.to_thread(self.files.stage, path, session.scene_id))
        try:
            new = await self.store.commit(
                session.scene_id, path, scene_hash, head, session.lease.epoch, owner, check
            )
        except BaseException:
            await _settle(verified)
            await _discard(self.files, staging)
            raise
        staged = await staging
        final = path.with_name(f"{session.scene_id}-{new.revision:08d}.blend")
        path.replace(final)
        if session.checkpoint is not None and session.checkpoint != final:
            self.discard(session.checkpoint)  # the store keeps every revision
        session.head, session.checkpoint, session.head_hash = new, final, scene_hash
        self.loaded = (session.scene_id, new.revision, scene_hash)
        return await asyncio.to_thread(self.files.publish, staged)

    async def close(self, session: SceneSession) -> None:
        """End the run's hold: keep it as a warm hold when the bridge holds the scene and
        warm holds are on, else release the lease."""
        self.open_sessions -= 1
        await _stop(session.renewer)
        if session.lost:
            return
        if self._keeps_warm(session.scene_id):
            await self._hold_warm(session.lease)
            return
        with contextlib.suppress(Exception):
            await self.leases.release(session.lease)

    def _keeps_warm(self, scene_id: str) -> bool:
        held = self.loaded
        return (
            self.warm_for > 0
            and not self.closing
            and held is not None
            and held[0] == scene_id
            and self.holds_scene()
        )

    async def _hold_warm(self, lease: Lease) -> None:
        await self.cool()  # never two: the bridge holds one scene
        try:
            idle = await self.leases.renew(msgspec.structs.replace(lease, idle=True))
        except LeaseLost:
            return  # taken over since the last renewal: nothing of ours to hold
        except Exception as exc:  # noqa: BLE001 - e.g. reconnecting: release, hold nothing
            log.warning("could not hold scene %s warm: %s", lease.scene_id, exc)
            with contextlib.suppress(Exception):
                await self.leases.release(lease)
            return
        hold = WarmHold(idle, until=self.clock() + self.warm_for)
        hold.keeper = asyncio.create_task(self._keep(hold), name="warm hold")
        self.warm = hold

    async def _keep(self, hold: WarmHold) -> None:
        """Renew the warm hold until its window closes or the bridge stops holding the
        scene (then release it), or another executor takes it over."""
        interval = max(getattr(self.leases, "ttl", 30.0) / 3, 0.05)
        while True:
            await asyncio.sleep(min(interval, max(hold.until - self.clock(), 0.0)))
            if self.clock() >= hold.until or not self.holds_scene():
                if self.warm is hold:
                    self.warm = None
                with contextlib.suppress(Exception):
                    await self.leases.release(hold.lease)
                return
            try:
                hold.lease = await self.leases.renew(hold.lease)
            except LeaseLost:
                if self.warm is hold:
                    self.warm = None
                log.info("scene %s, held warm, was taken over", hold.lease.scene_id)
                return
            except Exception as exc:  # noqa: BLE001 - e.g. reconnecting: try again next tick
                log.warning("renewing the warm hold on %s failed: %s", hold.lease.scene_id, exc)

    async def cool(self) -> None:
        """Release the warm hold, if any: the bridge is about to hold another scene."""
        hold, self.warm = self.warm, None
        if hold is None:
            return
        await _stop(hold.keeper)
        with contextlib.suppress(Exception):
            await self.leases.release(hold.lease)

    async def shutdown(self) -> None:
        """Release the warm hold and hold no more: the executor is stopping, and another
        should take its scenes at once rather than after the lease expires."""
        self.closing = True
        await self.cool()


async def _stop(task: asyncio.Task[None] | None) -> None:
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _discard(files: Exports, staging: asyncio.Future[StagedExport]) -> None:
    """Remove a staged copy whose revision was not stored; one not staged leaves nothing."""
    try:
        staged = await staging
    except Exception:  # noqa: BLE001 - the commit's own error is the one raised
        return
    await asyncio.to_thread(files.discard, staged)


async def _settle(verified: asyncio.Future[str]) -> None:
    """Wait out a full hash the commit no longer needs: the bridge answers it before the
    next request in any case, and its error belongs to no one."""
    with contextlib.suppress(Exception):
        await verified
