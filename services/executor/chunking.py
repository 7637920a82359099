"""Cutting a .blend into content-defined chunks and putting it back together, verified.

FastCDC cuts where the content says, not at fixed offsets, so bytes inserted or moved in a
saved file change only the chunks around them; each chunk is named by its BLAKE3 digest.
CPU-bound: callers run these on a thread, never on the shared event loop.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import blake3
from pyfastcdc import FastCDC

from contracts.revisions import DIGEST_PREFIX, MAX_CHUNK_BYTES, ChunkedRevision

AVERAGE = 64 * 1024
MINIMUM = 16 * 1024
_CUTTER = (AVERAGE, MINIMUM, MAX_CHUNK_BYTES)


class RevisionDamaged(Exception):
    """A stored revision does not read back as it was written: a chunk is missing or its
    bytes do not hash to its name, or the whole file does not hash to its digest."""


@dataclass(frozen=True)
class Cut:
    """A file cut into chunks: the manifest, and each distinct chunk's bytes by digest."""

    manifest: ChunkedRevision
    chunks: dict[str, bytes]


def cut(data: bytes, space: str) -> Cut:
    """The chunks of ``data`` for ``space``'s store, and the manifest that names them."""
    average, minimum, maximum = _CUTTER
    # FastCDC keeps gear state; one per call, so concurrent calls on threads are safe.
    cutter = FastCDC(average, min_size=minimum, max_size=maximum)
    view = memoryview(data)
    order: list[tuple[str, int]] = []
    chunks: dict[str, bytes] = {}
    for chunk in cutter.cut_buf(view):
        piece = bytes(view[chunk.offset : chunk.offset + chunk.length])
        digest = blake3.blake3(piece).hexdigest()
        order.append((digest, chunk.length))
        chunks.setdefault(digest, piece)
    manifest = ChunkedRevision(space=space, size=len(data), digest=file_digest(data), chunks=order)
    return Cut(manifest, chunks)


def file_digest(data: bytes) -> str:
    return DIGEST_PREFIX + blake3.blake3(data, max_threads=blake3.blake3.AUTO).hexdigest()


def assemble(manifest: ChunkedRevision, found: dict[str, bytes | None], what: str) -> bytes:
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
