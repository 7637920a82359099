"""In-memory fakes of the executor's ports, for tests of its domain logic.

Each one is held to the real adapter's behaviour by the shared tests in ``tests/contract/``.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import msgspec

from contracts.scenes import Head, SceneSummary
from contracts.tools import ToolCatalog
from services.executor.domain.journal import JournalEntry
from services.executor.domain.ports import (
    INSPECTION_SUFFIX,
    KEPT_REVISION_PREVIEWS,
    Lease,
    LeaseHeld,
    LeaseLost,
    StaleCommit,
    inspection_name,
)


class MemoryJournal:
    """Committed operations in a dict."""

    def __init__(self) -> None:
        self.entries: dict[str, JournalEntry] = {}

    async def get(self, key: str) -> JournalEntry | None:
        return self.entries.get(key)

    async def put(self, key: str, entry: JournalEntry) -> None:
        self.entries[key] = entry

    async def put_many(self, entries: Sequence[tuple[str, JournalEntry]]) -> None:
        for key, entry in entries:
            await self.put(key, entry)

    async def delete(self, key: str) -> None:
        self.entries.pop(key, None)


class MemorySceneStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.heads: dict[str, Head] = {}

    async def head(self, scene_id: str) -> Head | None:
        return self.heads.get(scene_id)

    async def fetch(self, head: Head, dest: Path) -> None:
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self.root / head.object_name, dest)

    async def commit(
        self,
        scene_id: str,
        blend: Path,
        scene_hash: str,
        parent: Head | None,
        epoch: int,
        owner: str = "",
        check: Callable[[], Awaitable[None]] | None = None,
    ) -> Head:
        current = self.heads.get(scene_id)
        if (current.kv_revision if current else 0) != (parent.kv_revision if parent else 0):
            raise StaleCommit(f"scene {scene_id} was committed by another executor")
        revision = (parent.revision if parent else 0) + 1
        name = f"{scene_id}-{revision}.blend"
        (self.root).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(blend, self.root / name)
        if check is not None:
            await check()
        head = Head(
            scene_id=scene_id,
            revision=revision,
            scene_hash=scene_hash,
            object_name=name,
            epoch=epoch,
            # A scene keeps the owner its first revision gave it.
            owner=parent.owner if parent is not None and parent.owner else owner,
            kv_revision=revision,
        )
        self.heads[scene_id] = head
        return head

    async def put_inspection(self, head: Head, document: bytes) -> str:
        name = inspection_name(head)
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / name).write_bytes(document)
        return name

    async def inspection(self, head: Head) -> str | None:
        name = inspection_name(head)
        return name if (self.root / name).is_file() else None

    async def read_inspection(self, name: str) -> bytes | None:
        path = self.root / name
        if not name.endswith(INSPECTION_SUFFIX) or not path.is_file():
            return None
        return path.read_bytes()

    async def put_result(self, name: str, blend: Path) -> None:
        dest = self.root / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(blend, dest)

    async def fetch_result(self, name: str, dest: Path) -> bool:
        source = self.root / name
        if not source.is_file():
            return False
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, dest)
        return True


class MemoryLeases:
    """Leases in a dict, compared and set by revision as in KV. Owners that share one
    ``held`` dict compete for scenes as executors on one bucket do."""

    def __init__(
        self,
        owner: str = "me",
        ttl: float = 30.0,
        clock: Callable[[], float] = time.time,
        held: dict[str, Lease] | None = None,
    ) -> None:
        self.owner = owner
        self.ttl = ttl
        self._clock = clock
        self.held: dict[str, Lease] = {} if held is None else held

    async def acquire(self, scene_id: str, take_idle: bool = False) -> Lease:
        now = self._clock()
        current = self.held.get(scene_id)
        held = current and current.owner != self.owner and current.expires_at > now
        if current and held and not (current.idle and take_idle):
            raise LeaseHeld(
                scene_id, current.owner, current.expires_at - now, current.idle, current.epoch
            )
        lease = Lease(
            scene_id=scene_id,
            owner=self.owner,
            epoch=(current.epoch if current else 0) + 1,
            expires_at=now + self.ttl,
        )
        return self._write(lease, current)

    async def retake(self, lease: Lease) -> Lease:
        current = self.held.get(lease.scene_id)
        if lease.owner != self.owner:
            raise LeaseLost(f"lease on scene {lease.scene_id} is {lease.owner}'s, not ours")
        if current is None or current.kv_revision != lease.kv_revision:
            raise LeaseLost(f"lease on scene {lease.scene_id} changed since it was held")
        taken = Lease(
            scene_id=lease.scene_id,
            owner=self.owner,
            epoch=lease.epoch + 1,
            expires_at=self._clock() + self.ttl,
        )
        return self._write(taken, current)

    async def renew(self, lease: Lease) -> Lease:
        current = self.held.get(lease.scene_id)
        if current is None or current.kv_revision != lease.kv_revision:
            raise LeaseLost(f"lease on scene {lease.scene_id} was taken over")
        renewed = msgspec.structs.replace(lease, expires_at=self._clock() + self.ttl)
        return self._write(renewed, current)

    async def release(self, lease: Lease) -> None:
        current = self.held.get(lease.scene_id)
        # Someone else holds it now: nothing of ours to release.
        if current is not None and current.kv_revision == lease.kv_revision:
            self._write(msgspec.structs.replace(lease, expires_at=0.0), current)

    def _write(self, lease: Lease, current: Lease | None) -> Lease:
        revision = (current.kv_revision if current else 0) + 1
        written = msgspec.structs.replace(lease, kv_revision=revision)
        self.held[lease.scene_id] = written
        return written


class MemoryPreviews:
    """In-memory previews for tests of domain logic."""

    def __init__(self) -> None:
        self.items: dict[str, bytes] = {}
        self.revisions: dict[tuple[str, int], bytes] = {}
        self.models: dict[tuple[str, int], bytes] = {}

    async def put(self, scene_id: str, png: bytes) -> None:
        self.items[scene_id] = png

    async def get(self, scene_id: str) -> bytes | None:
        return self.items.get(scene_id)

    async def put_revision(self, scene_id: str, revision: int, png: bytes) -> None:
        self.revisions[(scene_id, revision)] = png
        oldest = revision - KEPT_REVISION_PREVIEWS
        for old in [k for k in self.revisions if k[0] == scene_id and k[1] <= oldest]:
            del self.revisions[old]

    async def get_revision(self, scene_id: str, revision: int) -> bytes | None:
        return self.revisions.get((scene_id, revision))

    async def put_model(self, scene_id: str, revision: int, glb: bytes) -> None:
        self.models[(scene_id, revision)] = glb
        oldest = revision - KEPT_REVISION_PREVIEWS
        for old in [k for k in self.models if k[0] == scene_id and k[1] <= oldest]:
            del self.models[old]

    async def get_model(self, scene_id: str, revision: int) -> bytes | None:
        return self.models.get((scene_id, revision))


class MemorySceneSummaries:
    """In-memory summaries for tests of domain logic."""

    def __init__(self) -> None:
        self.items: dict[str, SceneSummary] = {}

    async def get(self, scene_id: str) -> SceneSummary | None:
        return self.items.get(scene_id)

    async def put(self, summary: SceneSummary) -> None:
        self.items[summary.scene_id] = summary


class StaticCatalog:
    """An in-memory catalog for tests of domain logic."""

    def __init__(self, catalog: ToolCatalog | None) -> None:
        self.catalog = catalog

    async def get(self) -> ToolCatalog | None:
        return self.catalog
