"""Reading an object of a JetStream object store by direct gets: its meta, then its chunks.

nats-py's ``ObjectStore.get`` reads the chunks through an ordered consumer it creates and
deletes for each object; a guardian's judgement, a head's load and ``scenes history`` each
paid that. The store's layout is the nats-io object store's (ADR-20): the meta message is
the last on ``$O.<bucket>.M.<base64 name>``, the chunks are on ``$O.<bucket>.C.<nuid>``
and their SHA-256 is in the meta. Writes still go through nats-py.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json

from nats.js import JetStreamContext, api
from nats.js.errors import DigestMismatchError, NotFoundError

from services.runtime import direct

DIGEST = "SHA-256"
HASH_INLINE = 1024 * 1024  # bytes hashed on the event loop; larger objects on a thread


class ObjectTooLarge(RuntimeError):
    """The object is larger than the reader may hold in memory."""


async def read_object(js: JetStreamContext, bucket: str, name: str, max_bytes: int) -> bytes | None:
    """The bytes of object ``name`` in the object store ``bucket``; None when there is no
    such object (or it was deleted). Raises ``ObjectTooLarge`` beyond ``max_bytes`` and
    nats-py's ``DigestMismatchError`` when the chunks do not match the meta's digest."""
    stream = f"OBJ_{bucket}"
    meta = f"$O.{bucket}.M.{base64.urlsafe_b64encode(name.encode()).decode()}"
    try:
        raw = await js.get_last_msg(stream, meta, direct=True)
    except NotFoundError:
        return None
    info = api.ObjectInfo.from_response(json.loads(raw.data or b"{}"))
    if info.deleted or not info.nuid:
        return None
    size = info.size or 0
    if size > max_bytes:
        raise ObjectTooLarge(
            f"object {name} of {bucket} holds {size} bytes, more than the {max_bytes} "
            "this reader takes"
        )
    if size == 0:
        return b""
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
    return data
