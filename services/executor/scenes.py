"""The .blend users open: each committed head is exported to ``<home>/scenes/<id>.blend``.

The authoritative revisions live in the scene store; this file is a convenience copy,
replaced atomically so a reader never sees half of it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from contracts.subjects import check_token


class SceneFiles:
    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, scene_id: str) -> Path:
        check_token(scene_id, "scene id")  # also keeps the path inside root
        return self.root / f"{scene_id}.blend"

    def export(self, source: Path, scene_id: str) -> Path:
        path = self.path(scene_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.stem}.exporting.blend")
        shutil.copyfile(source, tmp)
        os.replace(tmp, path)
        return path
