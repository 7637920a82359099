"""The chunks a user pushed (``contracts/pushed_chunks.py``), until a file is assembled
from them.

They live in the uploads bucket beside whole uploads, as ``<user>/chunk-<sha256 hex>``:
a user name is subject-safe (no ``/``), so no name of one user's can be another's, and
the bucket's TTL deletes a chunk a day after it was last sent (the collector sooner, at
BLENDMESH_UPLOAD_TTL). A chunk is said present only while it is younger than half the
shorter of the two (``fresh_for``), so one found now outlives the import that names it;
an older one is asked for again, and sending it renews it.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO, Any, TypeVar

from nats.js import JetStreamContext
from nats.js.errors import DigestMismatchError

from contracts.pushed_chunks import MAX_CHUNK_BYTES
from services.executor.adapters.uploads import ObjectStoreUploads
from services.runtime.nats.access import store_ttl
from services.runtime.nats.objects import meta, put_object, read_object

FRESH_FOR = (store_ttl("uploads") or 24 * 3600.0) / 2
PARALLEL = 16  # chunks looked up, read or stored at once
T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class Assembled:
    lacking: list[str]  # chunks the user has not stored: the file is incomplete
    size: int
    sha256: bytes


def _name(user: str, chunk: str) -> str:
    return f"{user}/chunk-{chunk}"


class PushedChunks:
    def __init__(self, js: JetStreamContext, prefix: str, kept: float = 2 * FRESH_FOR) -> None:
        """``kept``: seconds an upload is kept (BLENDMESH_UPLOAD_TTL)."""
        self._js = js
        self.fresh_for = min(FRESH_FOR, kept / 2)
        self._uploads = ObjectStoreUploads(js, prefix)
        self.bucket = self._uploads.bucket

    async def missing(self, user: str, chunks: Sequence[str]) -> list[str]:
        """The chunks of ``chunks`` that ``user`` has not sent lately, in their order."""
        await self._uploads.ensure()
        now = datetime.now(UTC)

        async def lacks(chunk: str) -> bool:
            info = await meta(self._js, self.bucket, _name(user, chunk))
            if info is None or not info.mtime:
                return True
            return (now - datetime.fromisoformat(info.mtime)).total_seconds() > self.fresh_for

        asked = list(dict.fromkeys(chunks))
        found = await _bounded(lacks, asked)
        return [c for c, lacking in zip(asked, found, strict=True) if lacking]

    async def store(self, user: str, chunks: Iterable[bytes]) -> list[str]:
        """Keep each chunk for ``user`` under the hash of its bytes; their names."""
        await self._uploads.ensure()

        async def one(data: bytes) -> str:
            digest = hashlib.sha256(data).digest()
            await put_object(self._js, self.bucket, _name(user, digest.hex()), data, digest)
            return digest.hex()

        return await _bounded(one, list(chunks))

    async def assemble(self, user: str, chunks: Sequence[str], dest: IO[bytes]) -> Assembled:
        """Write ``user``'s ``chunks`` to ``dest`` in order, each checked against its name,
        hashing the whole on the way; stops at the first batch with chunks ``user`` has not
        stored (named in ``lacking``; ``dest`` is then incomplete)."""
        await self._uploads.ensure()
        hasher, size = hashlib.sha256(), 0
        for at in range(0, len(chunks), PARALLEL):
            batch = chunks[at : at + PARALLEL]
            found = await asyncio.gather(*(self._read(user, c) for c in batch))
            lacking = [c for c, data in zip(batch, found, strict=True) if data is None]
            if lacking:
                rest = await self.missing(user, chunks[at + PARALLEL :])
                return Assembled([*lacking, *rest], size, hasher.digest())
            size += await asyncio.to_thread(_write, dest, hasher, found)
        return Assembled([], size, hasher.digest())

    async def _read(self, user: str, chunk: str) -> bytes | None:
        name = _name(user, chunk)
        try:
            return await read_object(
                self._js, self.bucket, name, MAX_CHUNK_BYTES, bytes.fromhex(chunk)
            )
        except DigestMismatchError:
            return None


async def _bounded(work: Callable[[T], Awaitable[R]], items: Iterable[T]) -> list[R]:
    gate = asyncio.Semaphore(PARALLEL)

    async def one(item: T) -> R:
        async with gate:
            return await work(item)

    return list(await asyncio.gather(*(one(i) for i in items)))


def _write(dest: IO[bytes], hasher: Any, found: list[bytes | None]) -> int:
    size = 0
    for data in found:
        assert data is not None  # the caller stopped at a missing chunk
        dest.write(data)
        hasher.update(data)
        size += len(data)
    return size
