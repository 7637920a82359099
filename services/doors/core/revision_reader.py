"""A scene revision read for a client a window of chunks at a time, verified as it goes.

A door that hands a revision out (the gateway's ``.blend`` download) must not hold the
scene: a 512 MiB revision read whole is 512 MiB per download, twice over while it is
joined. A revision is a manifest of content-addressed chunks (ADR 0021), so it can be sent
in file order a window at a time, each chunk checked against its name before it is sent;
the next window is fetched while this one goes out, so memory holds two windows at most.

The chunks are read through the executor's chunk store (``SceneFiles.chunks``), which
gives back a chunk's content however it stores it; only their hashing is done here.
A chunk that fails its check after bytes have gone out cannot turn into an error answer:
``pieces`` raises ``RevisionDamaged``, and the caller ends the transfer short.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import blake3

from contracts.revisions import DIGEST_PREFIX, ChunkedRevision
from contracts.scenes import Head
from services.executor.client import RevisionDamaged

# Chunks fetched at once (256 KiB at most each, 64 KiB on average): with the window being
# sent, at most 2 x 16 x 256 KiB = 8 MiB of a revision in memory per reader.
WINDOW = 16


class RevisionSource(Protocol):
    """Where revisions are read from: the executor's ``SceneFiles``, or a test's fake."""

    async def manifest(self, head: Head) -> ChunkedRevision | None: ...

    async def chunks(self, space: str, digests: Iterable[str]) -> dict[str, bytes | None]: ...

    async def blend(self, head: Head) -> bytes: ...


@dataclass
class RevisionReader:
    """One revision, opened: ``size`` is known before a byte is read (a Content-Length),
    ``pieces`` yields its bytes in order. Open with ``open_revision``."""

    head: Head
    size: int
    _files: RevisionSource
    _manifest: ChunkedRevision | None
    _whole: bytes | None = None
    _first: list[bytes] = field(default_factory=list)

    @property
    def what(self) -> str:
        return f"revision {self.head.revision} of scene {self.head.scene_id}"

    async def pieces(self) -> AsyncIterator[bytes]:
        """The revision's bytes in file order. Raises ``RevisionDamaged`` before the piece
        that fails: a chunk missing or not hashing to its name, or (before the last piece)
        chunks that do not add up to the file the manifest recorded."""
        if self._manifest is None:
            if self._whole:
                yield self._whole
            return
        manifest, hasher = self._manifest, blake3.blake3()
        starts = range(WINDOW, len(manifest.chunks), WINDOW)
        window, self._first = self._first, []
        ahead: asyncio.Task[list[bytes]] | None = None
        try:
            for at in [*starts, None]:
                if at is not None:  # fetched while this window is sent
                    ahead = asyncio.ensure_future(_fetch(self._files, manifest, at, self.what))
                await asyncio.to_thread(_update, hasher, window)
                if at is None:
                    # The last piece waits for the whole file's check: a transfer that
                    # misses it is short, never complete and wrong.
                    self._check_file(hasher)
                for piece in window:
                    yield piece
                if ahead is not None:
                    window, ahead = await ahead, None
        finally:
            if ahead is not None:
                ahead.cancel()
                with contextlib.suppress(BaseException):
                    await ahead

    def _check_file(self, hasher: blake3.blake3) -> None:
        assert self._manifest is not None
        if DIGEST_PREFIX + hasher.hexdigest() != self._manifest.digest:
            raise RevisionDamaged(
                f"{self.what} is damaged: its chunks do not add up to the file it recorded "
                f"({self._manifest.digest[:23]}, {self._manifest.size} bytes)"
            )


async def open_revision(files: RevisionSource, head: Head) -> RevisionReader:
    """``head``'s revision, its first window fetched and verified: a revision that cannot
    be read at all fails here, while an answer can still say so. A revision stored whole
    (small, or from before chunks) is read whole; it has no chunks to read by."""
    manifest = await files.manifest(head)
    if manifest is None:
        data = await files.blend(head)
        return RevisionReader(head, len(data), files, None, _whole=data)
    what = f"revision {head.revision} of scene {head.scene_id}"
    first = await _fetch(files, manifest, 0, what)
    return RevisionReader(head, manifest.size, files, manifest, _first=first)


async def _fetch(
    files: RevisionSource, manifest: ChunkedRevision, at: int, what: str
) -> list[bytes]:
    """The window of chunks from the ``at``-th, verified (hashing is off the event loop)."""
    refs = [d for d, _ in manifest.chunks[at : at + WINDOW]]
    found = await files.chunks(manifest.space, refs)
    return await asyncio.to_thread(_verified, refs, found, what)


def _verified(refs: list[str], found: Mapping[str, bytes | None], what: str) -> list[bytes]:
    pieces = []
    for digest in refs:
        piece = found.get(digest)
        if piece is None:
            raise RevisionDamaged(f"{what} is damaged: its chunk {digest[:16]} is not in the store")
        if blake3.blake3(piece).hexdigest() != digest:
            raise RevisionDamaged(
                f"{what} is damaged: its chunk {digest[:16]} does not hash to its name"
            )
        pieces.append(piece)
    return pieces


def _update(hasher: blake3.blake3, window: list[bytes]) -> None:
    for piece in window:
        hasher.update(piece)
