"""One typed table over a JetStream KV bucket, so adapters no longer speak nats-py's KV.

An adapter names its bucket and the msgspec type its values have; ``TypedKv`` binds the
bucket (``streams.ensure_kv``), encodes and decodes JSON, turns nats-py's missing, deleted
and wrong-last-sequence errors into ``None`` and the typed errors below, refuses a key the
server would refuse before sending it, and lists keys through ``kv_keys`` (nats-py's own
``keys()`` misses keys under load). A value that no longer decodes is reported with its
bucket and key, not as a bare msgspec traceback.

Errors::

    BlendmeshError
    ├── KvKeyInvalid       (ValueError)        a key NATS would refuse
    ├── KvValueUnreadable  (msgspec.DecodeError, a ValueError) the stored bytes are not a T
    ├── KvConflict         (RuntimeError)      compare-and-set lost: the key moved on
    │   └── KvKeyExists                        create: the key is already there
    └── KvTooManyKeys      (RuntimeError)      a listing past its limit

The stored bytes are ``msgspec.json.encode(value)`` (``order`` as asked), exactly what the
adapters wrote before they moved here, so buckets written by an older blendmesh still read.

The scene leases (``executor/adapters/leases.py``) and the scene heads
(``executor/adapters/scene_store.py``) still bind their buckets by hand; they are the next
to move onto this table.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

import msgspec
from nats.aio.client import Client
from nats.js import JetStreamContext
from nats.js.errors import KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue

from contracts.errors import BlendmeshError
from services.runtime.nats import access
from services.runtime.nats.atomic import (
    ATOMIC_DISABLED,
    MAX_BATCH,
    MIN_BATCH,
    BatchRefused,
    Message,
    publish_atomic,
)
from services.runtime.nats.kv_keys import live_keys
from services.runtime.nats.streams import ensure_kv

log = logging.getLogger("blendmesh.bus")

T = TypeVar("T")

# Far above the longest key blendmesh builds (a tag: 128 + "." + 128 characters) and far
# below the 4 KiB a NATS protocol line holds with the subject in it.
MAX_KEY_LENGTH = 512
MAX_KEYS = 10_000  # keys one listing returns at most; every key listed is then read
# Subject characters without wildcards or spaces, and no empty part between dots: nats-py
# lets ``a..b`` through, and the server then stores nothing and never answers the write.
_KEY = re.compile(r"^[-/_=a-zA-Z0-9]+(\.[-/_=a-zA-Z0-9]+)*$")


class KvKeyInvalid(BlendmeshError, ValueError):
    """A key the server would refuse (or read as a wildcard): empty, too long, or with a
    character outside letters, digits and ``- / _ = .``."""


class KvValueUnreadable(BlendmeshError, msgspec.DecodeError):
    """The bytes stored under a key are not a value of the table's type. A DecodeError
    still, so callers that caught msgspec's error before the move catch this one."""

    def __init__(self, message: str, bucket: str, key: str) -> None:
        super().__init__(message)
        self.bucket = bucket
        self.key = key


class KvConflict(BlendmeshError, RuntimeError):
    """A compare-and-set found the key at another revision than the one it was given:
    someone wrote it meanwhile. Read it again and decide afresh."""

    def __init__(self, message: str, bucket: str, key: str) -> None:
        super().__init__(message)
        self.bucket = bucket
        self.key = key


class KvKeyExists(KvConflict):
    """``create`` found the key already holding a value."""


class KvTooManyKeys(BlendmeshError, RuntimeError):
    """A listing found more keys than its caller reads at most."""

    def __init__(self, message: str, count: int) -> None:
        super().__init__(message)
        self.count = count


@dataclass(frozen=True, slots=True)
class Entry(Generic[T]):
    """A key's value and the revision it was written at (the bucket stream's sequence),
    which ``update`` takes to write only over that very value."""

    value: T
    revision: int


class TypedKv(Generic[T]):
    """The bucket ``<prefix>_<name>`` as a table of ``value_type`` values, JSON-encoded.

    ``value_type`` is anything msgspec decodes: a Struct, or ``dict[str, Any]`` for a
    bucket of plain JSON objects. ``order="sorted"`` writes object keys sorted, for a value
    whose bytes must not depend on how it was built.
    """

    def __init__(
        self,
        js: JetStreamContext,
        prefix: str,
        name: str,
        value_type: type[T],
        *,
        order: Literal["deterministic", "sorted"] | None = None,
        history: int = 1,
    ) -> None:
        self._js = js
        self._prefix = prefix
        self._name = name
        self._history = history
        self.bucket = access.bucket(prefix, name)
        self._type_name = getattr(value_type, "__name__", repr(value_type))
        self._encoder = msgspec.json.Encoder(order=order)
        self._decoder = msgspec.json.Decoder(value_type)

    async def _kv(self) -> KeyValue:
        return await ensure_kv(self._js, self._prefix, self._name, self._history)

    def check_key(self, key: str) -> str:
        """``key`` if the server takes it as one key; ``KvKeyInvalid`` saying why not."""
        if not key:
            raise KvKeyInvalid(f"an empty key is no key of KV bucket {self.bucket}")
        if len(key) > MAX_KEY_LENGTH:
            raise KvKeyInvalid(
                f"key {key[:40]!r}... of KV bucket {self.bucket} is {len(key)} characters "
                f"long; a key has {MAX_KEY_LENGTH} at most"
            )
        if not _KEY.match(key):
            raise KvKeyInvalid(
                f"key {key!r} of KV bucket {self.bucket} is not valid: use letters, digits "
                "and - / _ = ., with no spaces or wildcards (* >) and no empty part "
                "between dots"
            )
        return key

    async def revision(self, key: str) -> int | None:
        """The revision ``key`` holds a value at; None when it has none (never written,
        deleted or purged). Decodes nothing, so it also answers for an unreadable value."""
        kv = await self._kv()
        try:
            found = await kv.get(self.check_key(key))
        except KeyNotFoundError:  # nats-py raises it for deleted keys too
            return None
        # No JSON value is empty: an empty one (written by hand) reads as none, as in get.
        return found.revision if found.value and found.revision else None

    async def get(self, key: str, known: Entry[T] | None = None) -> Entry[T] | None:
        """The value under ``key`` and its revision; None when it has none. When the key
        is still at ``known``'s revision, ``known`` itself comes back, not decoded again
        (a large value read often, such as the tool catalog)."""
        kv = await self._kv()
        try:
            found = await kv.get(self.check_key(key))
        except KeyNotFoundError:
            return None
        if not found.value or not found.revision:
            return None
        if known is not None and known.revision == found.revision:
            return known
        try:
            value = self._decoder.decode(found.value)
        except msgspec.DecodeError as exc:  # ValidationError included
            raise KvValueUnreadable(
                f"the value of key {key!r} in KV bucket {self.bucket} (revision "
                f"{found.revision}) is not a {self._type_name}: {exc}; write it again, or "
                "delete the key",
                self.bucket,
                key,
            ) from None
        return Entry(value, found.revision)

    async def put(self, key: str, value: T) -> int:
        """Write ``value`` under ``key`` whatever it held; the new revision."""
        kv = await self._kv()
        return await kv.put(self.check_key(key), self._encoder.encode(value))

    async def put_many(self, items: Sequence[tuple[str, T]], nc: Client | None = None) -> None:
        """Write each value under its key, in order, stopping at the first that fails. With
        ``nc`` and enough of them, as atomic batches (ADR 0069): all of a batch or none;
        a bucket that takes no batches gets them one by one."""
        encoded = [(self.check_key(key), self._encoder.encode(value)) for key, value in items]
        kv = await self._kv()
        if nc is not None and len(encoded) >= MIN_BATCH:
            stream = f"KV_{self.bucket}"
            try:
                for start in range(0, len(encoded), MAX_BATCH):
                    chunk = encoded[start : start + MAX_BATCH]
                    messages: list[Message] = [
                        (f"$KV.{self.bucket}.{key}", data, {}) for key, data in chunk
                    ]
                    await publish_atomic(nc, stream, messages)
                return
            except BatchRefused as refused:
                # An older mesh's bucket takes no batches, a busy server no more of them:
                # one by one, in order. A chunk stored before is written again, which a
                # put allows.
                if refused.code != ATOMIC_DISABLED:
                    log.warning("%s; writing %d keys one by one", refused, len(encoded))
        for key, data in encoded:
            await kv.put(key, data)

    async def create(self, key: str, value: T) -> int:
        """Write ``value`` only if ``key`` holds none (a deleted key counts as none); the
        new revision, or ``KvKeyExists``."""
        kv = await self._kv()
        try:
            return await kv.create(self.check_key(key), self._encoder.encode(value))
        except KeyWrongLastSequenceError:
            raise KvKeyExists(
                f"key {key!r} of KV bucket {self.bucket} already holds a value",
                self.bucket,
                key,
            ) from None

    async def update(self, key: str, value: T, revision: int) -> int:
        """Write ``value`` only if ``key`` is still at ``revision``; the new revision, or
        ``KvConflict`` when someone wrote (or deleted) it since."""
        kv = await self._kv()
        try:
            return await kv.update(self.check_key(key), self._encoder.encode(value), last=revision)
        except KeyWrongLastSequenceError:
            raise KvConflict(
                f"key {key!r} of KV bucket {self.bucket} is no longer at revision {revision}: "
                "it was written or deleted meanwhile",
                self.bucket,
                key,
            ) from None

    async def delete(self, key: str) -> None:
        """Forget ``key``'s value, leaving a delete marker (its history, if kept, stays)."""
        kv = await self._kv()
        await kv.delete(self.check_key(key))

    async def purge(self, key: str) -> None:
        """Forget ``key`` and every value it held before."""
        kv = await self._kv()
        await kv.purge(self.check_key(key))

    async def keys(self, starts_with: str = "", limit: int = MAX_KEYS) -> list[str]:
        """The keys holding a value, sorted, those starting with ``starts_with`` alone;
        ``KvTooManyKeys`` when more than ``limit`` do."""
        await self._kv()  # a bucket nobody wrote yet is made, and lists empty
        found = sorted(
            key
            for key in await live_keys(self._js, self._prefix, self._name)
            if key.startswith(starts_with)
        )
        if len(found) > limit:
            which = f" starting {starts_with!r}" if starts_with else ""
            raise KvTooManyKeys(
                f"{len(found)} keys{which} in KV bucket {self.bucket}, more than the {limit} "
                "read at once",
                len(found),
            )
        return found
