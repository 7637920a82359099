"""A scene's head, read from the ``scene_heads`` bucket: the store commits it, and it is
all a door needs to know whose a scene is before a run is planned, without importing
every store the executor's client reaches."""

from __future__ import annotations

import msgspec
from nats.js import JetStreamContext
from nats.js.errors import KeyDeletedError, KeyNotFoundError

from contracts.scenes import Head
from services.runtime.nats.streams import ensure_kv

BUCKET = "scene_heads"


async def read_head(js: JetStreamContext, prefix: str, scene_id: str) -> Head | None:
    kv = await ensure_kv(js, prefix, BUCKET)
    try:
        entry = await kv.get(scene_id)
    except (KeyNotFoundError, KeyDeletedError):
        return None
    head = msgspec.json.decode(entry.value or b"", type=Head)
    return msgspec.structs.replace(head, kv_revision=entry.revision or 0)


class KvHeads:
    """The heads alone (``services.doors.core.studio.Heads``)."""

    def __init__(self, js: JetStreamContext, prefix: str) -> None:
        self._js, self._prefix = js, prefix

    async def head(self, scene_id: str) -> Head | None:
        return await read_head(self._js, self._prefix, scene_id)
