"""The .blend users open: each committed head is exported to ``<home>/scenes/<id>.blend``
(and its preview to ``<id>.png`` beside it).

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

    def preview_path(self, scene_id: str) -> Path:
        return self.path(scene_id).with_suffix(".png")

    def export_preview(self, png: bytes, scene_id: str) -> Path:
        path = self.preview_path(scene_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.stem}.exporting.png")
        tmp.write_bytes(png)
        os.replace(tmp, path)
        return path

    def export(self, source: Path, scene_id: str) -> Path:
        path = self.path(scene_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.stem}.exporting.blend")
        shutil.copyfile(source, tmp)
        os.replace(tmp, path)
        return path
