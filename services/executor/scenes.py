"""Saved scenes: one .blend per scene id, replaced atomically, never half written."""

from __future__ import annotations

import os
from pathlib import Path

from contracts.subjects import check_token
from services.executor.ports import Bridge


class SceneFiles:
    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, scene_id: str) -> Path:
        check_token(scene_id, "scene id")  # also keeps the path inside root
        return self.root / f"{scene_id}.blend"

    async def open(self, bridge: Bridge, scene_id: str) -> str:
        """Load the scene into the bridge (an empty scene if it was never saved)."""
        path = self.path(scene_id)
        if path.exists():
            return await bridge.load(str(path))
        return await bridge.reset()

    async def commit(self, bridge: Bridge, scene_id: str) -> Path:
        path = self.path(scene_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.stem}.saving.blend")
        await bridge.save(str(tmp), compress=True)
        os.replace(tmp, path)
        return path
