"""The scene right after an operation that cannot be repeated, kept so a replay loads it.

The journal is a redo log of deterministic operations (docs/adr/0004): a rollback or a
crash recovery rebuilds the scene by calling them again. A Python step is not
deterministic (its code may read the clock, or randomness), and running approved code a
second time nobody approved twice would be wrong anyway. So after such a step succeeds,
the executor stores the scene as a *result image* before it journals the success, and
every later replay loads that image instead of calling the tool (docs/adr/0011).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from contracts.errors import BlendmeshError
from contracts.session import REPRODUCIBLE
from contracts.tools import DeterminismClass
from services.executor.domain.ports import Bridge, SceneStore


class ResultMissing(BlendmeshError):
    """A result image the journal names is not in the store (or not readable)."""


def repeatable(kind: DeterminismClass | None) -> bool:
    """Whether calling a tool of this class again rebuilds what the call did: a seeded
    tool pins the same seed for the same arguments. An unknown class is not trusted."""
    return kind in REPRODUCIBLE


def image_name(key: str) -> str:
    """Where the result image of the journal entry ``key`` is stored."""
    return f"_results/{hashlib.sha256(key.encode()).hexdigest()}"


@dataclass
class ResultImages:
    """Keeps and loads result images through the scene store."""

    store: SceneStore
    bridge: Bridge
    work_dir: Path

    async def keep(self, key: str) -> str:
        """Store the bridge's current scene as the image of ``key``; returns its name."""
        name = image_name(key)
        path = self.work_dir / f"{name.rpartition('/')[2]}.blend"
        # Uncompressed: Blender's compression was most of a big scene's save; the store
        # packs the image itself, faster and off Blender's path (ADR 0035).
        await self.bridge.save(str(path), compress=False)
        try:
            await self.store.put_result(name, path)
        finally:
            path.unlink(missing_ok=True)
        return name

    async def load(self, name: str) -> str:
        """Load the image ``name`` into the bridge; the scene's hash afterwards."""
        path = self.work_dir / f"{name.rpartition('/')[2]}.blend"
        try:
            if not await self.store.fetch_result(name, path):
                raise ResultMissing(f"the result image {name} is not in the scene store")
            return await self.bridge.load(str(path))
        finally:
            path.unlink(missing_ok=True)
