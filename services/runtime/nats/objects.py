"""Objects of a JetStream object store, read by direct gets and written pipelined.

The store's layout is the nats-io object store's (ADR-20), so nats-py reads what this
writes and the other way round: an object's meta is the last message on
``$O.<bucket>.M.<base64 name>``, its chunks are on ``$O.<bucket>.C.<nuid>``, and the meta
holds their size, count and SHA-256.

nats-py's ``ObjectStore.get`` reads the chunks through an ordered consumer it creates and
deletes for each object; its ``put`` asks the stream API for the old meta before it
writes, and cuts an object into 128 KiB chunks, one fsync each. A run reads one object
(the guardians' artifact) and writes two (its ``.blend`` and that artifact), so each
cost sat on every run's path.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import IO, Any, BinaryIO

from nats.errors import NoRespondersError
from nats.js import JetStreamContext, api
from nats.js.errors import DigestMismatchError, NotFoundError

from contracts.errors import BlendmeshError
from services.runtime.nats import direct

log = logging.getLogger(__name__)

DIGEST = "SHA-256"
HASH_INLINE = 1024 * 1024  # bytes hashed on the event loop; larger objects on a thread
# Bytes per chunk: half the server's 1 MiB max_payload, so a .blend of a few hundred
# objects is one chunk, one fsync, where nats-py's 128 KiB default made it several.
CHUNK = 512 * 1024


class ObjectTooLarge(BlendmeshError, RuntimeError):
    """The object is larger than the reader may hold in memory."""


async def read_object(
    js: JetStreamContext, bucket: str, name: str, max_bytes: int, sha256: bytes | None = None
) -> bytes | None:
    """The bytes of object ``name`` in the object store ``bucket``; None when there is no
    such object (or it was deleted). Raises ``ObjectTooLarge`` beyond ``max_bytes`` and
    nats-py's ``DigestMismatchError`` when the chunks do not match the meta's digest, or
    the meta's digest is not ``sha256`` when one is given: an object named by its content
    is then verified by one pass over its bytes, not two."""
    found = await read_stored(js, bucket, name, max_bytes, sha256)
    return None if found is None else found[1]


async def read_stored(
    js: JetStreamContext, bucket: str, name: str, max_bytes: int, sha256: bytes | None = None
) -> tuple[api.ObjectInfo, bytes] | None:
    """``read_object`` with the meta the bytes were read by: its headers say how a writer
    encoded them (``put_object``'s ``headers``)."""
    stream = f"OBJ_{bucket}"
    info = await _meta(js, bucket, name)
    if info is None:
        return None
    if (
        sha256 is not None
        and info.digest != f"{DIGEST}={base64.urlsafe_b64encode(sha256).decode()}"
    ):
        raise DigestMismatchError
    size = info.size or 0
    if size > max_bytes:
        raise ObjectTooLarge(
            f"object {name} of {bucket} holds {size} bytes, more than the {max_bytes} "
            "this reader takes"
        )
    if size == 0:
        return info, b""
    chunks = await direct.read(
        js, stream, f"$O.{bucket}.C.{info.nuid}", limit=max(info.chunks or 0, 1)
    )
    data = b"".join(chunk.data for chunk in chunks)
    kind, _, encoded = (info.digest or "").partition("=")
    if kind.upper() != DIGEST or len(data) != size:
        raise DigestMismatchError
    digest = (
        hashlib.sha256(data)
        if size <= HASH_INLINE
        else await asyncio.to_thread(hashlib.sha256, data)
    )
    if digest.digest() != base64.urlsafe_b64decode(encoded):
        raise DigestMismatchError
    return info, data


async def copy_object(
    js: JetStreamContext, bucket: str, name: str, dest: BinaryIO, max_bytes: int, sha256: bytes
) -> bool:
    """Write object ``name`` of ``bucket`` to ``dest`` a batch of chunks at a time, so
    memory holds one batch, never the object; False when there is no such object. Raises
    ``ObjectTooLarge`` beyond ``max_bytes`` (before a byte is written) and nats-py's
    ``DigestMismatchError`` when the meta's digest is not ``sha256`` or the bytes written
    are not the ones it names: ``dest`` then holds them, and is the caller's to remove."""
    info = await _meta(js, bucket, name)
    if info is None:
        return False
    if info.digest != f"{DIGEST}={base64.urlsafe_b64encode(sha256).decode()}":
        raise DigestMismatchError
    size = info.size or 0
    if size > max_bytes:
        raise ObjectTooLarge(
            f"object {name} of {bucket} holds {size} bytes, more than the {max_bytes} "
            "this reader takes"
        )
    hasher, written = hashlib.sha256(), 0
    subject = f"$O.{bucket}.C.{info.nuid}"
    limit = max(info.chunks or 0, 1)
    async with contextlib.aclosing(
        direct.batches(js, f"OBJ_{bucket}", subject, limit=limit)
    ) as got:
        async for batch in got:
            written += await asyncio.to_thread(_write, dest, hasher, batch)
            if written > size:
                raise DigestMismatchError
    if written != size or hasher.digest() != sha256:
        raise DigestMismatchError
    return True


def _write(dest: BinaryIO, hasher: Any, batch: list[direct.Stored]) -> int:
    for chunk in batch:
        dest.write(chunk.data)
        hasher.update(chunk.data)
    return sum(len(chunk.data) for chunk in batch)


async def put_object(
    js: JetStreamContext,
    bucket: str,
    name: str,
    data: bytes,
    sha256: bytes | None = None,
    headers: dict[str, list[str]] | None = None,
) -> None:
    """Store ``data`` as object ``name`` of ``bucket``, replacing any object of that name;
    ``sha256`` is the digest of ``data`` when the caller has it already (it is not checked:
    a reader checks the bytes against it). ``headers`` go into the meta (the nats-io
    layout's ``nats.Header``: each name has a list of values), for ``read_stored``.

    Chunks go to a fresh subject while the old meta is looked up; the meta that names them
    is published only once every chunk is stored, so a reader never finds a meta whose
    chunks are missing. A replaced object's chunks are purged after the new meta is
    stored; a failed put purges its own.
    """

    async def pieces() -> AsyncIterator[bytes]:
        for at in range(0, len(data), CHUNK):
            yield data[at : at + CHUNK]

    async def digest() -> bytes:
        if sha256 is not None:
            return sha256
        return (
            hashlib.sha256(data)
            if len(data) <= HASH_INLINE
            else await asyncio.to_thread(hashlib.sha256, data)
        ).digest()

    await _put(js, bucket, name, pieces(), digest, headers)


async def put_file(
    js: JetStreamContext,
    bucket: str,
    name: str,
    source: IO[bytes],
    sha256: bytes | None = None,
    headers: dict[str, list[str]] | None = None,
) -> int:
    """``put_object`` for the bytes of ``source`` from where it stands to its end, read a
    chunk at a time off the event loop, so memory holds one chunk, never the object; the
    number of bytes stored. The digest is computed as the chunks are read: a ``sha256``
    the caller gives (the name of a content-addressed object) must be the bytes', or the
    put raises nats-py's ``DigestMismatchError`` and stores nothing (the file changed
    after it was hashed)."""
    hasher = hashlib.sha256()

    async def pieces() -> AsyncIterator[bytes]:
        while chunk := await asyncio.to_thread(_read, source, hasher):
            yield chunk

    async def digest() -> bytes:
        found = hasher.digest()
        if sha256 is not None and found != sha256:
            raise DigestMismatchError
        return found

    return await _put(js, bucket, name, pieces(), digest, headers)


def _read(source: IO[bytes], hasher: Any) -> bytes:
    chunk = source.read(CHUNK)
    hasher.update(chunk)
    return chunk


async def _put(
    js: JetStreamContext,
    bucket: str,
    name: str,
    pieces: AsyncIterator[bytes],
    digest: Callable[[], Awaitable[bytes]],
    headers: dict[str, list[str]] | None,
) -> int:
    """Publish ``pieces`` as the chunks of object ``name``, then its meta with ``digest()``
    (asked once every chunk is out); the object's size (``put_object`` says the rest)."""
    stream = f"OBJ_{bucket}"
    nuid = secrets.token_hex(11)  # the chunks' subject token, new for every put
    chunks = f"$O.{bucket}.C.{nuid}"
    old = asyncio.ensure_future(_meta(js, bucket, name))  # asked while the chunks go out
    old.add_done_callback(_retrieved)  # a put that fails first never awaits it
    size = count = 0
    try:
        # One after another: a chunk's position in the stream is its place in the object,
        # and nats-py's pipelined publish leaves a refused message's future unresolved.
        async for piece in pieces:
            await js.publish(chunks, piece, stream=stream)
            size, count = size + len(piece), count + 1
        info = api.ObjectInfo(
            name=name,
            bucket=bucket,
            nuid=nuid,
            size=size,
            chunks=count,
            mtime=datetime.now(UTC).isoformat(),
            digest=f"{DIGEST}={base64.urlsafe_b64encode(await digest()).decode()}",
            headers=headers,
            options=api.ObjectMetaOptions(max_chunk_size=CHUNK),
        )
        meta = json.dumps(info.as_dict()).encode()
        rollup = {api.Header.ROLLUP.value: "sub"}  # the new meta replaces the old one
        await js.publish(_meta_subject(bucket, name), meta, stream=stream, headers=rollup)
    except BaseException:
        old.cancel()
        with contextlib.suppress(Exception):  # the put's own error is the one to raise
            await js.purge_stream(stream, subject=chunks)
        raise
    try:
        replaced = await old
    except Exception as exc:  # noqa: BLE001 - the object is stored; only old chunks stay
        log.warning("object %s of %s stored, but its old chunks were not looked up: %s",
                    name, bucket, exc)  # fmt: skip
        return size
    if replaced is not None and replaced.nuid != nuid:
        await js.purge_stream(stream, subject=f"$O.{bucket}.C.{replaced.nuid}")
    return size


def _retrieved(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()


def _meta_subject(bucket: str, name: str) -> str:
    return f"$O.{bucket}.M.{base64.urlsafe_b64encode(name.encode()).decode()}"


async def meta(js: JetStreamContext, bucket: str, name: str) -> api.ObjectInfo | None:
    """The meta of object ``name`` (its size, digest and time); None when there is none."""
    return await _meta(js, bucket, name)


async def _meta(js: JetStreamContext, bucket: str, name: str) -> api.ObjectInfo | None:
    """The meta of object ``name``; None when there is none, or it is deleted, or there
    is no such store (nothing answers a direct get on a stream that does not exist)."""
    try:
        raw = await js.get_last_msg(f"OBJ_{bucket}", _meta_subject(bucket, name), direct=True)
    except (NotFoundError, NoRespondersError):
        return None
    info = api.ObjectInfo.from_response(json.loads(raw.data or b"{}"))
    return None if info.deleted or not info.nuid else info
