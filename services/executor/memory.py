"""In-memory fakes of the executor's ports, for tests of its domain logic.

Each one is held to the real adapter's behaviour by the shared tests in ``tests/contract/``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import msgspec

from contracts.scenes import Head, SceneSummary
from contracts.tools import ToolCatalog
from services.executor.journal import JournalEntry
from services.executor.ports import Lease, LeaseHeld, StaleCommit


class MemoryJournal:
    """Committed operations in a dict."""

    def __init__(self) -> None:
        self.entries: dict[str, JournalEntry] = {}

    async def get(self, key: str) -> JournalEntry | None:
        return self.entries.get(key)

    async def put(self, key: str, entry: JournalEntry) -> None:
        self.entries[key] = entry

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
        self, scene_id: str, blend: Path, scene_hash: str, parent: Head | None, epoch: int
    ) -> Head:
        current = self.heads.get(scene_id)
        if (current.kv_revision if current else 0) != (parent.kv_revision if parent else 0):
            raise StaleCommit(f"scene {scene_id} was committed by another executor")
        revision = (parent.revision if parent else 0) + 1
        name = f"{scene_id}-{revision}.blend"
        (self.root).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(blend, self.root / name)
        head = Head(
            scene_id=scene_id,
            revision=revision,
            scene_hash=scene_hash,
            object_name=name,
            epoch=epoch,
            kv_revision=revision,
        )
        self.heads[scene_id] = head
        return head


class MemoryLeases:
    ttl = 30.0

    def __init__(self, owner: str = "me") -> None:
        self.owner = owner
        self.held: dict[str, Lease] = {}

    async def acquire(self, scene_id: str) -> Lease:
        current = self.held.get(scene_id)
        if current and current.owner != self.owner and current.expires_at > 0:
            raise LeaseHeld(scene_id, current.owner, 1.0)
        lease = Lease(
            scene_id=scene_id,
            owner=self.owner,
            epoch=(current.epoch if current else 0) + 1,
            expires_at=1e12,
        )
        self.held[scene_id] = lease
        return lease

    async def renew(self, lease: Lease) -> Lease:
        return lease

    async def release(self, lease: Lease) -> None:
        self.held[lease.scene_id] = msgspec.structs.replace(lease, expires_at=0.0)


class MemoryPreviews:
    """In-memory previews for tests of domain logic."""

    def __init__(self) -> None:
        self.items: dict[str, bytes] = {}

    async def put(self, scene_id: str, png: bytes) -> None:
        self.items[scene_id] = png

    async def get(self, scene_id: str) -> bytes | None:
        return self.items.get(scene_id)


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
