"""The published catalogs: the executor writes what its bridge declares, others read.

Kept in a KV bucket so the planner and the policy judge plans against the registry that
will run them, without importing the bridge (which needs ``bpy``): the tools under
``tools``, the Geometry Nodes node types of the bridge's Blender under ``nodes``.
"""

from __future__ import annotations

import msgspec
from nats.js import JetStreamContext
from nats.js.errors import KeyNotFoundError
from nats.js.kv import KeyValue

from contracts import nodes
from contracts.nodes import NodeCatalog
from contracts.tools import ToolCatalog
from services.runtime.streams import ensure_kv

KEY = "tools"
NODES_KEY = "nodes"


class KvCatalog:
    def __init__(self, js: JetStreamContext, prefix: str) -> None:
        self._js = js
        self._prefix = prefix
        self._cached: tuple[int, ToolCatalog] | None = None

    async def _kv(self) -> KeyValue:
        return await ensure_kv(self._js, self._prefix, "catalog")

    async def publish(self, catalog: ToolCatalog) -> None:
        kv = await self._kv()
        await kv.put(KEY, msgspec.json.encode(catalog))

    async def get(self) -> ToolCatalog | None:
        kv = await self._kv()
        try:
            entry = await kv.get(KEY)
        except KeyNotFoundError:
            return None
        if self._cached and self._cached[0] == entry.revision:
            return self._cached[1]
        catalog = msgspec.json.decode(entry.value or b"", type=ToolCatalog)
        self._cached = (entry.revision or 0, catalog)
        return catalog


class KvNodeCatalog:
    """The node catalog in the same bucket, read again only when its revision changes."""

    def __init__(self, js: JetStreamContext, prefix: str) -> None:
        self._js = js
        self._prefix = prefix
        self._cached: tuple[int, NodeCatalog] | None = None

    async def _kv(self) -> KeyValue:
        return await ensure_kv(self._js, self._prefix, "catalog")

    async def publish(self, catalog: NodeCatalog) -> None:
        kv = await self._kv()
        await kv.put(NODES_KEY, nodes.encode(catalog))

    async def get(self) -> NodeCatalog | None:
        kv = await self._kv()
        try:
            entry = await kv.get(NODES_KEY)
        except KeyNotFoundError:
            return None
        if self._cached and self._cached[0] == entry.revision:
            return self._cached[1]
        catalog = nodes.decode(entry.value or b"")
        self._cached = (entry.revision or 0, catalog)
        return catalog
