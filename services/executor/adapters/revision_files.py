"""The files behind the scene store: a manifest decoded, a saved .blend mapped for the
cut, a stored object packed or unpacked, and a file written so no reader sees half of it.
Plumbing only; which objects a revision needs is the scene store's."""

from __future__ import annotations

import contextlib
import mmap
from pathlib import Path

from contracts import revisions
from contracts.revisions import ChunkedRevision, ManifestError
from services.executor.adapters import packing
from services.executor.domain.chunking import RevisionDamaged

# What one read of a .blend takes into memory at most (a 1000-object scene is about 1 MB
# compressed; a packed one inflates to this at most).
MAX_BLEND_BYTES = 1024 * 1024 * 1024


def _decode(data: bytes, what: str) -> ChunkedRevision:
    try:
        return revisions.decode(data)
    except ManifestError as exc:
        raise RevisionDamaged(f"{what} is damaged: {exc}") from None


def _map(path: Path) -> bytes | mmap.mmap:
    """The saved file's bytes, mapped, not read: reading copied a big scene's 77 MiB into
    fresh memory before the cut went over it, a third of the commit's own time, where the
    map hands the cut the page cache's pages. The file is the executor's own, written
    before the commit and renamed only after it, so it cannot shrink under the map."""
    with path.open("rb") as file:
        if file.seek(0, 2) == 0:
            return b""  # nothing to map
        return mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)


def _unmap(data: bytes | mmap.mmap) -> None:
    if isinstance(data, mmap.mmap):
        # A view of it still held (by a traceback's frame) keeps it mapped until the last
        # view goes: the map is closed then, by its own finalizer.
        with contextlib.suppress(BufferError):
            data.close()


def _packed(headers: dict[str, list[str]] | None, what: str) -> bool:
    try:
        return packing.encoding(headers) is not None
    except packing.Unreadable as exc:
        raise RevisionDamaged(f"{what} is damaged: its stored file {exc}") from None


def _unpacked(
    data: bytes, headers: dict[str, list[str]] | None, what: str, limit: int = MAX_BLEND_BYTES
) -> bytes:
    try:
        return packing.unpacked(data, headers, limit)
    except packing.Unreadable as exc:
        raise RevisionDamaged(f"{what} is damaged: its stored file {exc}") from None


def _pack_file(path: Path) -> tuple[bytes, bytes]:
    return packing.pack(path.read_bytes())


def _unpack_to(dest: Path, data: bytes, headers: dict[str, list[str]] | None, what: str) -> None:
    _write_atomically(dest, _unpacked(data, headers, what))


def _write_atomically(dest: Path, data: bytes) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.part")
    tmp.write_bytes(data)
    tmp.replace(dest)
