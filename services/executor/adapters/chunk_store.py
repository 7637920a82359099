"""The chunks of scene revisions, in the JetStream Object Store bucket ``<prefix>_chunks``.

A chunk is an object named ``<space>/<blake3 hex>`` (``contracts.revisions.chunk_name``).
A commit uploads a chunk only when the store lacks it, or holds a copy so old that the
collector may be deleting it right now: such a copy is stored again, which renews its
time and its meta's sequence, so the collector's compare-and-delete of the old copy fails
(ADR 0021). Everything here is plumbing; which chunks a revision needs is the caller's.

A chunk is named by the BLAKE3 of its raw bytes, but stored packed (ADR 0035): a chunk
this uploads is one zstd frame whose meta says so (``packing``), and a reader unpacks it
before the caller checks it against its name. Chunks stored raw before keep reading, and
deduplication is unchanged: it asks by name, whichever way the found copy is stored.
"""

from __future__ import annotations

import asyncio
import base64
import json
import secrets
from collections.abc import Awaitable, Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import TypeVar

from nats.errors import NoRespondersError
from nats.js import JetStreamContext, api
from nats.js.errors import (
    BucketNotFoundError,
    DigestMismatchError,
    KeyWrongLastSequenceError,
    NotFoundError,
)

from contracts.revisions import MAX_CHUNK_BYTES, chunk_name
from services.executor.adapters import packing
from services.executor.domain.chunking import Piece, RevisionDamaged
from services.runtime.nats.objects import CHUNK, DIGEST, ObjectTooLarge, read_stored
from services.runtime.nats.streams import object_store_config

NAME = "chunks"
PARALLEL = 64  # chunk reads or writes in flight at once: one connection, a bounded queue
# Chunks packed on threads at once: the default pool's threads are every service's (an
# embedded mesh shares them), so an import's hundreds of chunks take a few at a time.
PACKING = 2
_EXPECTED_LAST_SUBJECT_SEQ = "Nats-Expected-Last-Subject-Sequence"
T = TypeVar("T")
Stored = tuple[dict[str, list[str]] | None, bytes]  # a chunk's meta headers, stored bytes


class ChunkUnreadable(RevisionDamaged):
    """A chunk's stored bytes that do not unpack (corrupt, a bomb, an unknown encoding):
    ``digest`` names the chunk and ``why`` says what is wrong, for the message of the
    revision that names it."""

    def __init__(self, digest: str, why: str) -> None:
        super().__init__(f"the stored chunk {digest[:16]} {why}")
        self.digest, self.why = digest, why


class JetStreamChunks:
    def __init__(self, js: JetStreamContext, prefix: str) -> None:
        self._js = js
        self.bucket = f"{prefix}_{NAME}".replace(".", "_")
        self.stream = f"OBJ_{self.bucket}"
        self._ready = False
        self._packing = asyncio.Semaphore(PACKING)

    async def _ensure(self) -> None:
        if self._ready:
            return
        try:
            await self._js.object_store(self.bucket)
        except BucketNotFoundError:
            await self._js.create_object_store(self.bucket, object_store_config(self._js))
        self._ready = True

    async def meta(self, name: str) -> tuple[int, api.ObjectInfo] | None:
        """The stream sequence and info of object ``name``'s meta; None when there is none
        or it is deleted."""
        subject = _meta_subject(self.bucket, name)
        try:
            raw = await self._js.get_last_msg(self.stream, subject, direct=True)
        except (NotFoundError, NoRespondersError):
            return None
        info = api.ObjectInfo.from_response(json.loads(raw.data or b"{}"))
        return None if info.deleted or not info.nuid else (raw.seq or 0, info)

    async def store(self, space: str, chunks: Mapping[str, Piece], fresh_for: float) -> int:
        """Make every chunk of ``chunks`` present in ``space``; a copy older than
        ``fresh_for`` seconds is stored again (packed, whatever the old copy was).
        Returns the bytes uploaded: packed, as they are stored."""
        await self._ensure()
        now = datetime.now(UTC)

        async def one(digest: str) -> int:
            name = chunk_name(space, digest)
            found = await self.meta(name)
            if found is not None and _age(found[1], now) < fresh_for:
                return 0
            async with self._packing:
                packed, sha256 = await asyncio.to_thread(packing.pack, chunks[digest])
            await self._put(name, packed, sha256, replaces=found is not None)
            if found is not None:  # stored again: the old copy's bytes go
                await self._js.purge_stream(self.stream, subject=self._chunk_subject(found[1]))
            return len(packed)

        return sum(await _bounded(one, chunks))

    async def _put(self, name: str, data: bytes, sha256: bytes, replaces: bool) -> None:
        """One packed chunk as a one-message object of the nats-io layout
        (``objects.put_object`` without its look-up of an old meta: the caller has just
        looked)."""
        nuid = secrets.token_hex(11)
        await self._js.publish(f"$O.{self.bucket}.C.{nuid}", data, stream=self.stream)
        info = api.ObjectInfo(
            name=name,
            bucket=self.bucket,
            nuid=nuid,
            size=len(data),
            chunks=1,
            mtime=datetime.now(UTC).isoformat(),
            digest=f"{DIGEST}={base64.urlsafe_b64encode(sha256).decode()}",
            headers=packing.PACKED,
            options=api.ObjectMetaOptions(max_chunk_size=CHUNK),
        )
        meta = json.dumps(info.as_dict()).encode()
        # A rollup purges the subject's older messages: only needed when there are some
        # (a copy stored again, or a deletion's marker); a new chunk's meta skips its cost.
        headers = {api.Header.ROLLUP.value: "sub"} if replaces else None
        await self._js.publish(_meta_subject(self.bucket, name), meta, stream=self.stream,
                               headers=headers)  # fmt: skip

    def _chunk_subject(self, info: api.ObjectInfo) -> str:
        return f"$O.{self.bucket}.C.{info.nuid}"

    async def read(self, space: str, digests: Iterable[str]) -> dict[str, bytes | None]:
        """The raw bytes of each chunk, unpacked; None for one the store lacks (the caller
        checks each against its name). Raises ``ChunkUnreadable`` for a packed chunk that
        does not unpack within ``MAX_CHUNK_BYTES``."""

        async def one(digest: str) -> Stored | None:
            name = chunk_name(space, digest)
            try:
                found = await read_stored(self._js, self.bucket, name, MAX_CHUNK_BYTES)
            except (DigestMismatchError, ObjectTooLarge):
                return None, b""  # stored bytes that are not the chunk: the hash says so
            return None if found is None else (found[0].headers, found[1])

        wanted = list(dict.fromkeys(digests))
        stored = dict(zip(wanted, await _bounded(one, wanted), strict=True))
        # One thread for the batch: a chunk unpacks in well under a millisecond.
        return await asyncio.to_thread(_unpack_all, stored)

    async def listing(self) -> list[api.ObjectInfo]:
        """Every chunk's info (deleted ones left out)."""
        await self._ensure()
        store = await self._js.object_store(self.bucket)
        try:
            return await store.list(ignore_deletes=True)
        except NotFoundError:
            return []

    async def delete_if_older(self, name: str, older_than: float) -> int:
        """Delete chunk ``name`` when its copy is older than ``older_than`` seconds and no
        commit has stored it again since this looked; returns the bytes freed (0: kept)."""
        found = await self.meta(name)
        if found is None or _age(found[1], datetime.now(UTC)) < older_than:
            return 0
        seq, info = found
        gone = api.ObjectInfo(name=name, bucket=self.bucket, nuid=info.nuid, deleted=True)
        headers = {
            api.Header.ROLLUP.value: "sub",
            _EXPECTED_LAST_SUBJECT_SEQ: str(seq),  # a commit stored it again: keep that
        }
        try:
            await self._js.publish(
                _meta_subject(self.bucket, name),
                json.dumps(gone.as_dict()).encode(),
                stream=self.stream,
                headers=headers,
            )
        except Exception as exc:
            if _wrong_sequence(exc):
                return 0
            raise
        await self._js.purge_stream(self.stream, subject=self._chunk_subject(info))
        return info.size or 0


def _unpack_all(stored: dict[str, Stored | None]) -> dict[str, bytes | None]:
    raw: dict[str, bytes | None] = {}
    for digest, found in stored.items():
        if found is None:
            raw[digest] = None
            continue
        try:
            raw[digest] = packing.unpacked(found[1], found[0], MAX_CHUNK_BYTES)
        except packing.Unreadable as exc:
            raise ChunkUnreadable(digest, str(exc)) from None
    return raw


def _wrong_sequence(exc: BaseException) -> bool:
    # JetStream's "wrong last sequence" (10071); nats-py raises it as a plain APIError.
    return isinstance(exc, KeyWrongLastSequenceError) or getattr(exc, "err_code", 0) == 10071


def _age(info: api.ObjectInfo, now: datetime) -> float:
    try:
        return (now - datetime.fromisoformat(info.mtime or "")).total_seconds()
    except ValueError:  # a meta without a time: as old as can be, so it is renewed
        return float("inf")


def _meta_subject(bucket: str, name: str) -> str:
    return f"$O.{bucket}.M.{base64.urlsafe_b64encode(name.encode()).decode()}"


async def _bounded(work: Callable[[str], Awaitable[T]], keys: Iterable[str]) -> list[T]:
    gate = asyncio.Semaphore(PARALLEL)

    async def one(key: str) -> T:
        async with gate:
            return await work(key)

    return list(await asyncio.gather(*(one(k) for k in keys)))
