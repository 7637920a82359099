"""Cutting a .blend into content-defined chunks and putting it back together, verified.

FastCDC cuts where the content says, not at fixed offsets, so bytes inserted or moved in a
saved file change only the chunks around them; each chunk is named by its BLAKE3 digest.
CPU-bound: callers run these on a thread, never on the shared event loop.
"""

from __future__ import annotations

import mmap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import blake3
from pyfastcdc import FastCDC

from contracts.errors import BlendmeshError
from contracts.revisions import DIGEST_PREFIX, MAX_CHUNK_BYTES, ChunkedRevision

AVERAGE = 64 * 1024
MINIMUM = 16 * 1024
_CUTTER = (AVERAGE, MINIMUM, MAX_CHUNK_BYTES)
Piece = bytes | memoryview  # a chunk as read from the store, or a view into a cut file


class RevisionDamaged(BlendmeshError):
    """A stored revision does not read back as it was written: a chunk is missing or its
    bytes do not hash to its name, or the whole file does not hash to its digest."""


@dataclass(frozen=True)
class Cut:
    """A file cut into chunks: the manifest, and each distinct chunk's bytes by digest, as
    views into the file's own bytes: a commit holds the file once, not twice."""

    manifest: ChunkedRevision
    chunks: dict[str, memoryview]


def cut(data: bytes | mmap.mmap, space: str, parent: ChunkedRevision | None = None) -> Cut:
    """The chunks of ``data`` (a file's bytes, or its map) for ``space``'s store, and the
    manifest that names them.

    With ``parent``, the manifest of the revision ``data`` most likely edits: where one of
    its chunks starts at the offset the cut has reached and the bytes there hash to that
    chunk's name, the chunk is taken as it is, uncut. FastCDC decides a cut point from the
    bytes since the chunk's start alone, so it would cut the same chunk again. Elsewhere it
    cuts afresh until a chunk ends where one of the parent's starts. The result is the
    plain cut's; hashing a chunk costs a fraction of cutting it, and an edit of a big scene
    saved from the same session leaves most chunks in place."""
    view = memoryview(data)
    order: list[tuple[str, int]] = []
    chunks: dict[str, memoryview] = {}
    starts = _starts(parent, len(data)) if parent is not None else {}
    offset = 0
    while offset < len(data):
        kept = starts.get(offset)
        if kept is not None:
            digest, length = kept
            piece = view[offset : offset + length]
            if blake3.blake3(piece).hexdigest() == digest:
                order.append(kept)
                chunks.setdefault(digest, piece)
                offset += length
                continue
        offset = _cut_from(view, offset, starts, order, chunks)
    manifest = ChunkedRevision(space=space, size=len(data), digest=file_digest(data), chunks=order)
    return Cut(manifest, chunks)


def _starts(parent: ChunkedRevision, size: int) -> dict[int, tuple[str, int]]:
    """The parent's chunks by their start. Its last chunk ended where its file did, not
    where its bytes said, so it is one to keep only in a file that ends there too."""
    starts: dict[int, tuple[str, int]] = {}
    offset = 0
    for digest, length in parent.chunks:
        if offset + length < parent.size or offset + length == size:
            starts[offset] = (digest, length)
        offset += length
    return starts


def _cut_from(
    view: memoryview,
    start: int,
    starts: Mapping[int, tuple[str, int]],
    order: list[tuple[str, int]],
    chunks: dict[str, memoryview],
) -> int:
    """Cut ``view`` from ``start`` (a cut point) until a chunk ends at one of ``starts``
    or the file ends; returns where it stopped."""
    average, minimum, maximum = _CUTTER
    # FastCDC keeps gear state; one per call, so concurrent calls on threads are safe.
    cutter = FastCDC(average, min_size=minimum, max_size=maximum)
    end = start
    for chunk in cutter.cut_buf(view[start:]):
        piece = view[start + chunk.offset : start + chunk.offset + chunk.length]
        digest = blake3.blake3(piece).hexdigest()
        order.append((digest, chunk.length))
        chunks.setdefault(digest, piece)
        end = start + chunk.offset + chunk.length
        if end in starts:
            break
    return end


def file_digest(data: bytes | mmap.mmap) -> str:
    return DIGEST_PREFIX + blake3.blake3(data, max_threads=blake3.blake3.AUTO).hexdigest()


def assemble(manifest: ChunkedRevision, found: Mapping[str, Piece | None], what: str) -> bytes:
    """The file ``manifest`` describes, from ``found`` (digest -> bytes, None for a chunk the
    store lacks); every chunk and the whole file are verified. ``what`` names the revision
    in a ``RevisionDamaged`` message."""
    for digest in _distinct(d for d, _ in manifest.chunks):
        piece = found.get(digest)
        if piece is None:
            raise RevisionDamaged(f"{what} is damaged: its chunk {digest[:16]} is not in the store")
        if blake3.blake3(piece).hexdigest() != digest:
            raise RevisionDamaged(
                f"{what} is damaged: its chunk {digest[:16]} does not hash to its name"
            )
    data = b"".join(found[d] or b"" for d, _ in manifest.chunks)
    if len(data) != manifest.size or file_digest(data) != manifest.digest:
        raise RevisionDamaged(
            f"{what} is damaged: its chunks do not add up to the file it recorded "
            f"({manifest.digest[:23]}, {manifest.size} bytes)"
        )
    return data


def _distinct(digests: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(digests))


class ChunkWriter:
    """Writes the file a manifest describes to ``dest`` a window of chunks at a time, each
    verified before it is written, so memory holds one window, never the file. ``dest``
    appears, whole and verified, only at ``finish``. Blocking: run it on a thread."""

    def __init__(self, manifest: ChunkedRevision, dest: Path, what: str) -> None:
        self.manifest, self.dest, self.what = manifest, dest, what
        dest.parent.mkdir(parents=True, exist_ok=True)
        self._tmp = dest.with_name(f".{dest.name}.part")
        self._file: BinaryIO = self._tmp.open("wb")
        self._hash = blake3.blake3()
        self._size = 0

    def write(self, refs: list[tuple[str, int]], found: Mapping[str, Piece | None]) -> None:
        for digest, _ in refs:
            piece = found.get(digest)
            if piece is None:
                raise RevisionDamaged(
                    f"{self.what} is damaged: its chunk {digest[:16]} is not in the store"
                )
            if blake3.blake3(piece).hexdigest() != digest:
                raise RevisionDamaged(
                    f"{self.what} is damaged: its chunk {digest[:16]} does not hash to its name"
                )
            self._file.write(piece)
            self._hash.update(piece)
            self._size += len(piece)

    def finish(self) -> None:
        self._file.close()
        digest = DIGEST_PREFIX + self._hash.hexdigest()
        if self._size != self.manifest.size or digest != self.manifest.digest:
            raise RevisionDamaged(
                f"{self.what} is damaged: its chunks do not add up to the file it recorded "
                f"({self.manifest.digest[:23]}, {self.manifest.size} bytes)"
            )
        self._tmp.replace(self.dest)

    def abort(self) -> None:
        self._file.close()
        self._tmp.unlink(missing_ok=True)
