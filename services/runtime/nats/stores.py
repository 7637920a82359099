"""Every KV bucket and object store of a mesh, made before its services start.

The admin makes them (no other role may create a stream: a stream's config, a republish
or a source, can make the server write where its creator may not), and each is waited for
until it has a leader, so that a service's first read or write finds it ready: a store
just created with three copies answers nothing until its leader is elected.
"""

from __future__ import annotations

import asyncio
from functools import partial

from nats.js import JetStreamContext
from nats.js.errors import BucketNotFoundError

from services.runtime.nats import access
from services.runtime.nats.ready import READY_WAIT, elected, until_ready
from services.runtime.nats.streams import kv_config, object_store_config


async def ensure_stores(js: JetStreamContext, prefix: str, wait: float = READY_WAIT) -> None:
    """Create every KV bucket and object store the services use, as they would on first
    use, and wait (``wait`` seconds at most) until each has a leader."""
    buckets = [access.bucket(prefix, name) for name in access.KV_BUCKETS]
    stores = {access.bucket(prefix, name): access.store_ttl(name) for name in access.OBJECT_STORES}
    await asyncio.gather(
        *(until_ready(f"KV bucket {b}", partial(_bucket, js, b), wait) for b in buckets),
        *(
            until_ready(f"object store {s}", partial(_store, js, s, ttl), wait)
            for s, ttl in stores.items()
        ),
    )


async def _bucket(js: JetStreamContext, bucket: str) -> None:
    try:
        await js.key_value(bucket)
    except BucketNotFoundError:
        await js.create_key_value(kv_config(js, bucket))
    info = elected(await js.stream_info(f"KV_{bucket}"))
    # Made by a blendmesh that read keys the slow way, or wrote them one by one: a run's
    # journal entries go as one atomic batch (ADR 0069), which nats-py cannot ask for
    # when it creates a bucket.
    if not info.config.allow_direct or not info.config.allow_atomic:
        info.config.allow_direct = True
        info.config.allow_atomic = True
        await js.update_stream(info.config)


async def _store(js: JetStreamContext, bucket: str, ttl: float | None) -> None:
    try:
        await js.object_store(bucket)
    except BucketNotFoundError:
        await js.create_object_store(bucket, object_store_config(js, ttl))
    elected(await js.stream_info(f"OBJ_{bucket}"))
