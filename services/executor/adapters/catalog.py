"""The published catalogs: the executor writes what its bridge declares, others read.

Kept in a KV bucket so the planner and the policy judge plans against the registry that
will run them, without importing the bridge (which needs ``bpy``): the tools under
``tools``, the Geometry Nodes node types of the bridge's Blender under ``nodes``. A reader
decodes a catalog again only when a new one was published (a new revision).
"""

from __future__ import annotations

from nats.js import JetStreamContext

from contracts.nodes import NodeCatalog
from contracts.tools import ToolCatalog
from services.runtime.nats.kv import Entry, TypedKv

BUCKET = "catalog"
KEY = "tools"
NODES_KEY = "nodes"


class KvCatalog:
    def __init__(self, js: JetStreamContext, prefix: str) -> None:
        self._table = TypedKv(js, prefix, BUCKET, ToolCatalog)
        self._cached: Entry[ToolCatalog] | None = None

    async def publish(self, catalog: ToolCatalog) -> None:
        await self._table.put(KEY, catalog)

    async def get(self) -> ToolCatalog | None:
        found = await self._table.get(KEY, known=self._cached)
        if found is None:
            return None
        self._cached = found
        return found.value


class KvNodeCatalog:
    """The node catalog in the same bucket."""

    def __init__(self, js: JetStreamContext, prefix: str) -> None:
        # Keys sorted, as contracts.nodes.encode writes them: the same Blender publishes
        # the same bytes.
        self._table = TypedKv(js, prefix, BUCKET, NodeCatalog, order="sorted")
        self._cached: Entry[NodeCatalog] | None = None

    async def publish(self, catalog: NodeCatalog) -> None:
        await self._table.put(NODES_KEY, catalog)

    async def get(self) -> NodeCatalog | None:
        found = await self._table.get(NODES_KEY, known=self._cached)
        if found is None:
            return None
        self._cached = found
        return found.value
