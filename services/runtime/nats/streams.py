"""Stream, KV bucket and object store setup: the immutable log streams and how every
bucket and store is created (on file, with the replicas of ``use_replicas``)."""

from __future__ import annotations

import logging
import weakref

from nats.js import JetStreamContext
from nats.js.api import (
    DiscardPolicy,
    KeyValueConfig,
    ObjectStoreConfig,
    StorageType,
    StreamConfig,
    StreamInfo,
)
from nats.js.errors import BadRequestError, BucketNotFoundError, NotFoundError
from nats.js.kv import KeyValue

from contracts import subjects
from services.runtime.nats import access
from services.runtime.nats.ready import ON_A_CLUSTER, READY_WAIT, elected, until_ready

log = logging.getLogger("blendmesh.bus")

DUPLICATE_WINDOW = 120.0  # seconds: covers a publisher's retries after a crash or reconnect


# The copies of each stream a context creates (BLENDMESH_REPLICAS), kept per connection
# like the bucket handles below, so adapters that create a bucket on first use need not
# be told.
_REPLICAS: weakref.WeakKeyDictionary[JetStreamContext, int] = weakref.WeakKeyDictionary()


def use_replicas(js: JetStreamContext, replicas: int) -> None:
    """Create every stream, KV bucket and object store through ``js`` with ``replicas``
    copies: 1 on one server, 3 (or 5) on a cluster, where a stream then outlives the loss
    of one (or two) of its servers."""
    _REPLICAS[js] = replicas


def replicas_of(js: JetStreamContext) -> int:
    return _REPLICAS.get(js, 1)


def event_log_config(prefix: str, replicas: int = 1) -> StreamConfig:
    """The event log: file storage, nothing can be deleted or purged, duplicates dropped."""
    return log_config(subjects.stream_name(prefix), subjects.stream_subjects(prefix), replicas)


def log_config(name: str, subject_filters: list[str], replicas: int = 1) -> StreamConfig:
    """A log stream: file storage, nothing can be deleted or purged, duplicates dropped."""
    return StreamConfig(
        name=name,
        subjects=subject_filters,
        storage=StorageType.FILE,
        deny_delete=True,
        deny_purge=True,
        duplicate_window=DUPLICATE_WINDOW,
        discard=DiscardPolicy.OLD,
        allow_direct=True,
        num_replicas=replicas,
        # A run's events are stored as one atomic batch where they are many (ADR 0069).
        allow_atomic=True,
    )


async def ensure_stream(js: JetStreamContext, config: StreamConfig, wait: float) -> StreamInfo:
    """Find the stream ``config`` names, or create it, once it has a leader; waits
    (``until_ready``) while JetStream is not ready, and while this user may not create
    it: on a server blendmesh started only the admin may, and the process that started
    it is about to."""
    name = config.name or ""

    async def find_or_create() -> StreamInfo:
        try:
            info = await js.stream_info(name)
        except NotFoundError:
            try:
                info = await js.add_stream(config)
            except BadRequestError:  # created meanwhile by another process
                info = await js.stream_info(name)
        return elected(info)

    return await until_ready(
        f"stream {name}",
        find_or_create,
        wait,
        f"{ON_A_CLUSTER}; on a server blendmesh started, start the mesh (`blendmesh up`, or "
        "the Procfile's nats line) first: only its admin may create the stream",
    )


async def ensure_event_log(js: JetStreamContext, prefix: str, wait: float = READY_WAIT) -> None:
    """Create the event-log stream, or check that the existing one is still immutable.

    Only admin may create or widen it on a server blendmesh started: the other roles find
    it made, and never send the request they would be refused.
    """
    await ensure_log(js, event_log_config(prefix, replicas_of(js)), wait)


async def ensure_log(js: JetStreamContext, config: StreamConfig, wait: float) -> None:
    """Create a log stream (``log_config``), or check that the existing one is still
    immutable, keeps the copies asked for, and logs every subject ``config`` names."""
    name = config.name or ""
    info = await ensure_stream(js, config, wait)
    if not (info.config.deny_delete and info.config.deny_purge):
        raise RuntimeError(
            f"stream {name} exists but allows delete or purge; "
            "blendmesh needs an immutable log: recreate it or use another BLENDMESH_PREFIX"
        )
    copies = info.config.num_replicas or 1
    if copies < replicas_of(js):
        log.warning(
            "stream %s keeps %d copies, fewer than the %d of BLENDMESH_REPLICAS; the admin "
            "user can add them (nats stream edit %s --replicas %d)",
            name,
            copies,
            config.num_replicas,
            name,
            config.num_replicas,
        )
    if sorted(info.config.subjects or []) != sorted(config.subjects or []):
        # A newer blendmesh logs more subjects; widening a stream keeps its messages.
        await js.update_stream(config.evolve(num_replicas=copies))


async def allow_atomic_batches(js: JetStreamContext, streams: list[str]) -> None:
    """Let ``streams`` take atomic batches (ADR 0069), as the admin does at start: a log or
    bucket an older blendmesh made has them off, and its messages stay as they are. Until
    then, and on a server too old for them, publishers store one message at a time."""
    for name in streams:
        info = await js.stream_info(name)
        if not info.config.allow_atomic:
            info.config.allow_atomic = True
            await js.update_stream(info.config)


# Binding a bucket costs a round trip; adapters call ensure_kv on every access, so the
# handles are kept per connection (they stay valid across reconnects).
_BUCKETS: weakref.WeakKeyDictionary[JetStreamContext, dict[str, KeyValue]] = (
    weakref.WeakKeyDictionary()
)


async def ensure_kv(js: JetStreamContext, prefix: str, name: str, history: int = 1) -> KeyValue:
    """The bucket ``<prefix>_<name>``, created with file storage on first use (on a server
    blendmesh started, the admin has created it: see ``stores.ensure_stores``)."""
    bucket = access.bucket(prefix, name)
    bound = _BUCKETS.setdefault(js, {})
    if bucket not in bound:
        try:
            bound[bucket] = await js.key_value(bucket)
        except BucketNotFoundError:
            bound[bucket] = await js.create_key_value(kv_config(js, bucket, history))
    return bound[bucket]


def kv_config(js: JetStreamContext, bucket: str, history: int = 1) -> KeyValueConfig:
    """How a KV bucket is created through ``js``: on file, with its replicas."""
    # Direct gets: a key is read by the stream's own responder, not through the
    # JetStream API's queue; every run reads several keys (head, lease, journal).
    return KeyValueConfig(
        bucket=bucket,
        history=history,
        storage=StorageType.FILE,
        replicas=replicas_of(js),
        direct=True,
    )


def object_store_config(js: JetStreamContext, ttl: float | None = None) -> ObjectStoreConfig:
    """How an object store is created through ``js``: on file, with its replicas, its
    objects kept for ``ttl`` seconds (None: for ever)."""
    return ObjectStoreConfig(storage=StorageType.FILE, replicas=replicas_of(js), ttl=ttl)
