"""The .blend users open: each committed head is exported to ``<home>/scenes/<id>.blend``
(and its preview to ``<id>.png`` beside it).

The authoritative revisions live in the scene store; this file is a convenience copy,
replaced atomically so a reader never sees half of it. Beside it, ``.<id>.blend.written``
records the digest of the bytes blendmesh wrote: a file that no longer has them was
changed by someone (or never written by blendmesh), and a run must not overwrite it
silently (``changed``, ``keep_aside``; the doors ask the person to adopt or discard it).

The digest is BLAKE3, which hashes a 77 MiB shot in 18 ms where SHA-256 took 45 ms, on
the commit's path and in every ``blendmesh run``'s check. Records written before it
(``.<id>.blend.sha256``, a bare SHA-256 hex) are still read, so an upgrade asks nobody.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import blake3

from contracts.subjects import check_token

if TYPE_CHECKING:
    from services.executor.adapters.trash import Trash
    from services.executor.domain.ports import StagedExport

BLAKE3, SHA256 = "blake3", "sha256"


class SceneExports:
    def __init__(self, root: Path, trash: Trash | None = None) -> None:
        self.root = root
        # Holds the exported copy a new one replaces, so the replace frees nothing on the
        # commit's path; None: the replace frees it (a door's read-only use, tests).
        self.trash = trash

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
        return self.publish(self.stage(source, scene_id))

    def stage(self, source: Path, scene_id: str) -> StagedExport:
        """Copy ``source`` beside the exported file and hash it; a commit does this while
        the store takes the revision, and publishes it once stored."""
        # Here, not at the top: the CLI's check of an exported file imports this module,
        # and the executor's ports would add to every command's start.
        from services.executor.domain.ports import StagedExport

        path = self.path(scene_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.stem}.exporting.blend")
        # The kernel copies (copy_file_range or sendfile), and the hash reads the source's
        # pages where they lie: no byte passes through Python, which only the executor's
        # own Blender saved and nothing writes until the commit ends.
        shutil.copyfile(source, tmp)
        return StagedExport(scene_id, tmp, _digest(source, BLAKE3))

    def publish(self, staged: StagedExport) -> Path:
        # A rename keeps the file's size, inode and times: the stat of the staged file is
        # the published one's.
        self._record(staged.scene_id, staged.digest, _stamp(staged.path))
        path = self.path(staged.scene_id)
        if self.trash is not None:
            self.trash.keep(path)
        os.replace(staged.path, path)
        return path

    def discard(self, staged: StagedExport) -> None:
        staged.path.unlink(missing_ok=True)

    def _written_path(self, scene_id: str) -> Path:
        return self.root / f".{scene_id}.blend.written"

    def _legacy_path(self, scene_id: str) -> Path:
        return self.root / f".{scene_id}.blend.sha256"

    def _record(self, scene_id: str, digest: str, stamp: str) -> None:
        record = self._written_path(scene_id)
        tmp = record.with_name(f"{record.name}.part")
        tmp.write_text(f"{digest}\n{stamp}\n")
        os.replace(tmp, record)
        self._legacy_path(scene_id).unlink(missing_ok=True)  # the new record says it all

    def _recorded(self, scene_id: str) -> tuple[str, str, int] | None:
        """The digest (``<scheme>:<hex>``) and stamp of what blendmesh wrote last, and
        when the record was written; None without a record."""
        for record, scheme in (
            (self._written_path(scene_id), ""),
            (self._legacy_path(scene_id), SHA256),
        ):
            try:
                text = record.read_text()
                recorded_at = record.stat().st_mtime_ns
            except FileNotFoundError:
                continue
            written, _, stamp = text.strip().partition("\n")
            return (f"{scheme}:{written}" if scheme else written), stamp, recorded_at
        return None

    def changed(self, scene_id: str) -> Path | None:
        """The exported file of ``scene_id`` when its bytes are not the ones blendmesh
        wrote last (edited by hand, or put there by someone else); None when it is as
        blendmesh wrote it or does not exist."""
        path = self.path(scene_id)
        if not path.is_file():
            return None
        recorded = self._recorded(scene_id)
        if recorded is None:
            return path
        written, stamp, recorded_at = recorded
        # Every `blendmesh run` asks this first, and hashing a 77 MiB shot cost 0.1-0.3 s
        # with SHA-256 (BLAKE3 still takes tens of ms):
        # a file whose size, inode and modification time are the ones recorded, and that
        # was last written before the record was (not within one tick of a coarse clock,
        # the racy case git's index guards against too), holds the bytes recorded.
        stat = path.stat()
        if stamp == _stamp(path) and stat.st_mtime_ns < recorded_at:
            return None
        scheme = written.partition(":")[0]
        return None if scheme in HASHES and written == _digest(path, scheme) else path

    def keep_aside(self, scene_id: str, now: float | None = None) -> Path:
        """Copy the exported file to ``<id>.blend.bak-<UTC time>`` beside it and accept the
        file as it is, so the next commit may replace it; returns the copy."""
        path = self.path(scene_id)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if now is None else now))
        backup = path.with_name(f"{path.name}.bak-{stamp}")
        n = 1
        while backup.exists():  # two discards within a second keep both copies
            backup, n = path.with_name(f"{path.name}.bak-{stamp}-{n}"), n + 1
        shutil.copyfile(path, backup)
        self._record(scene_id, _digest(path, BLAKE3), _stamp(path))
        return backup


def _stamp(path: Path) -> str:
    """What changes whenever a file's bytes are written: its size, inode and mtime."""
    stat = path.stat()
    return f"{stat.st_size} {stat.st_ino} {stat.st_mtime_ns}"


def _blake3(path: Path) -> str:
    with path.open("rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return blake3.blake3().hexdigest()  # an empty file cannot be mapped
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return blake3.blake3(data).hexdigest()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


HASHES: dict[str, Callable[[Path], str]] = {BLAKE3: _blake3, SHA256: _sha256}


def _digest(path: Path, scheme: str) -> str:
    """``<scheme>:<hex>`` of the file's bytes."""
    return f"{scheme}:{HASHES[scheme](path)}"
