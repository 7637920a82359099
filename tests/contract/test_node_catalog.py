"""The published node catalog: the executor writes it to KV, anyone reads it back, and a
reader decodes it again only when a new one is published."""

from __future__ import annotations

import pytest

from contracts.nodes import NodeCatalog, NodeSpec, SocketSpec
from services.executor.client import KvNodeCatalog
from services.runtime.service.host import Bus

pytestmark = pytest.mark.integration


def catalog(version: str) -> NodeCatalog:
    level = SocketSpec(name="Level", identifier="Level", bl_idname="NodeSocketInt", type="INT")
    spec = NodeSpec(bl_idname="GeometryNodeSubdivisionSurface", label="Subdivision Surface",
                    inputs=[level])  # fmt: skip
    return NodeCatalog(blender_version=version, nodes={spec.bl_idname: spec})


async def test_get_when_nothing_published_returns_none(executor_bus: Bus) -> None:
    assert await KvNodeCatalog(executor_bus.js, executor_bus.prefix).get() is None


async def test_get_when_published_returns_it_and_follows_a_new_one(executor_bus: Bus) -> None:
    writer = KvNodeCatalog(executor_bus.js, executor_bus.prefix)
    reader = KvNodeCatalog(executor_bus.js, executor_bus.prefix)
    await writer.publish(catalog("5.0.1"))
    first = await reader.get()
    assert first == catalog("5.0.1")
    assert await reader.get() is first  # same revision: not decoded again
    await writer.publish(catalog("5.0.2"))
    assert await reader.get() == catalog("5.0.2")
