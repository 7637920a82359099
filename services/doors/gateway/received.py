"""A file a request uploads, written to a private temporary file as it arrives.

The import route's body is a .blend of up to BLENDMESH_MAX_UPLOAD_BYTES (gigabytes, for a
production scene); held in memory it doubled the gateway's resident size while it was
staged. Here it goes to an unnamed file under the home's scratch space a megabyte at a
time, hashed on the way (the staged object's name and digest), so memory holds one
buffer. The file has no name (the system removes it once closed, even if the gateway
dies) and is closed when the request ends, however it ends: an upload over the limit
(``limits.Streamed`` raises as the count passes it), a body that is not a .blend (refused
on its first bytes, before the rest is read), a client that hung up midway.
"""

from __future__ import annotations

import asyncio
import hashlib
import tempfile
from collections.abc import AsyncIterable, AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from services.runtime.service.settings import Settings

FLUSH = 1024 * 1024  # bytes kept before a write: one thread hop per MiB, not per packet
FOLDER = "uploads"


@dataclass(frozen=True)
class Received:
    """The whole body: ``file`` at its start, ``size`` bytes whose SHA-256 is ``sha256``."""

    file: IO[bytes]
    size: int
    sha256: bytes


def folder(settings: Settings) -> Path:
    """Where uploads are written while they arrive: scratch space, the owner's alone."""
    return settings.work_dir / FOLDER


@asynccontextmanager
async def received(
    body: AsyncIterable[bytes], where: Path, check_head: Callable[[bytes], None], head: int
) -> AsyncIterator[Received]:
    """Write ``body`` to a temporary file in ``where``; ``check_head`` sees its first
    ``head`` bytes (all of it, when shorter) as soon as they arrived and may raise to stop
    the upload there. The file is closed, and so gone, when the block ends."""
    file = await asyncio.to_thread(_open, where)
    try:
        hasher, size, pending = hashlib.sha256(), 0, bytearray()
        async for chunk in body:
            pending += chunk
            if len(pending) >= max(FLUSH, head):
                if size == 0:
                    check_head(bytes(pending[:head]))
                size += await asyncio.to_thread(_write, file, hasher, pending)
                pending = bytearray()
        if size == 0:
            check_head(bytes(pending[:head]))
        size += await asyncio.to_thread(_write, file, hasher, pending)
        await asyncio.to_thread(file.seek, 0)
        yield Received(file, size, hasher.digest())
    finally:
        await asyncio.to_thread(file.close)


@asynccontextmanager
async def scratch(where: Path) -> AsyncIterator[IO[bytes]]:
    """An empty private temporary file in ``where``, gone when the block ends: where the
    gateway builds a file it did not receive whole."""
    file = await asyncio.to_thread(_open, where)
    try:
        yield file
    finally:
        await asyncio.to_thread(file.close)


def _open(where: Path) -> IO[bytes]:
    where.mkdir(mode=0o700, parents=True, exist_ok=True)
    # Unnamed (O_TMPFILE where the system has it) and 0600: no one else reads the upload,
    # and no file outlives the request.
    return tempfile.TemporaryFile(dir=where)


def _write(file: IO[bytes], hasher: Any, data: bytearray) -> int:
    file.write(data)
    hasher.update(data)
    return len(data)
