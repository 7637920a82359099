"""Staged uploads: a .blend a door has received for ``scene.import``, until the executor
loads it.

The doors write, the executor reads, both through this adapter, in the Object Store
bucket ``<prefix>_uploads``. An upload is named by its user and its content address
(``<user>/<sha256 hex>``), so one user's run cannot import another's file even when it
knows the hash; the bucket's TTL (``access.store_ttl``) deletes every upload a day after
it was staged, used or not, which outlasts any pending approval of the import.

Both ways go through ``runtime.objects`` (the nats-io layout, 512 KiB chunks, written from
a file a chunk at a time, read by batched direct gets): nats-py's own ``get`` read a
77 MiB upload through an ordered consumer 128 KiB at a time, fourteen seconds of a big
scene's import.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
from typing import IO, BinaryIO

from nats.js import JetStreamContext
from nats.js.errors import BucketNotFoundError, DigestMismatchError, NotFoundError
from nats.js.object_store import ObjectStore

from contracts.scene_files import DEFAULT_MAX_UPLOAD_BYTES
from services.runtime.nats.access import store_ttl
from services.runtime.nats.objects import copy_object, put_file, read_object
from services.runtime.nats.streams import object_store_config

NAME = "uploads"
HASHED = 1024 * 1024  # bytes read at a time to hash a file


def _name(user: str, blob: str) -> str:
    return f"{user}/{blob.removeprefix('sha256:')}"


def _digest(source: IO[bytes]) -> bytes:
    """The SHA-256 of ``source`` from where it stands to its end; it is left where it was."""
    start, hasher = source.tell(), hashlib.sha256()
    while block := source.read(HASHED):
        hasher.update(block)
    source.seek(start)
    return hasher.digest()


class ObjectStoreUploads:
    def __init__(self, js: JetStreamContext, prefix: str) -> None:
        self._js = js
        self.bucket = f"{prefix}_{NAME}".replace(".", "_")
        self._store: ObjectStore | None = None

    async def _objects(self) -> ObjectStore:
        if self._store is None:
            try:
                self._store = await self._js.object_store(self.bucket)
            except BucketNotFoundError:
                config = object_store_config(self._js, ttl=store_ttl(NAME))
                self._store = await self._js.create_object_store(self.bucket, config)
        return self._store

    async def ensure(self) -> None:
        """Make the bucket (with its TTL) if no one has yet."""
        await self._objects()

    async def stage(self, user: str, data: bytes | IO[bytes], sha256: bytes | None = None) -> str:
        """Store ``data`` (bytes, or a seekable binary file read from where it stands) for
        ``user``'s import; returns its blob id (``sha256:<hex>``). ``sha256`` is the
        digest of those bytes when the caller computed it while receiving them; the put
        checks it against the bytes it stores (``put_file``)."""
        # One path for every size: small bytes are a file in memory, and a file is read a
        # chunk at a time, so a scene of hundreds of MiB is never held here.
        source = io.BytesIO(data) if isinstance(data, bytes) else data
        if sha256 is None:  # hashed off the event loop: the name is the content's address
            sha256 = await asyncio.to_thread(_digest, source)
        blob = f"sha256:{sha256.hex()}"
        await self._objects()  # made with its TTL on first use
        await put_file(self._js, self.bucket, _name(user, blob), source, sha256)
        return blob

    async def size(self, user: str, blob: str) -> int | None:
        """How many bytes ``user``'s staged upload ``blob`` holds; None when there is none
        of ``user``'s (never staged, expired, or staged by someone else)."""
        if not blob.startswith("sha256:"):
            return None
        try:
            info = await (await self._objects()).get_info(_name(user, blob))
        except NotFoundError:
            return None
        return info.size

    async def get(
        self, user: str, blob: str, max_bytes: int = DEFAULT_MAX_UPLOAD_BYTES
    ) -> bytes | None:
        """``user``'s staged upload ``blob``, verified against its hash; None when there is
        none (never staged, expired, or staged by someone else) or its bytes are not the
        ones its name says. Raises ``ObjectTooLarge`` when it holds more than
        ``max_bytes``, before a byte of it is read."""
        await self._objects()
        try:
            sha256 = bytes.fromhex(blob.removeprefix("sha256:"))
        except ValueError:
            return None  # not a content address: nothing was staged under it
        try:
            return await read_object(self._js, self.bucket, _name(user, blob), max_bytes, sha256)
        except DigestMismatchError:
            return None

    async def fetch(self, user: str, blob: str, dest: BinaryIO, max_bytes: int) -> bool:
        """Write ``user``'s staged upload ``blob`` to ``dest``, a batch of chunks at a time,
        verified against its hash; False when there is none or its bytes are not the ones
        its name says (``dest`` may then hold some: the caller's to discard). Raises
        ``ObjectTooLarge`` when it holds more than ``max_bytes``, before writing a byte."""
        await self._objects()
        try:
            sha256 = bytes.fromhex(blob.removeprefix("sha256:"))
        except ValueError:
            return False  # not a content address: nothing was staged under it
        try:
            return await copy_object(
                self._js, self.bucket, _name(user, blob), dest, max_bytes, sha256
            )
        except DigestMismatchError:
            return False
