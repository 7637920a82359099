"""The MCP server as ``blendmesh mcp`` runs it on stdio, over in-memory streams: the
version it names, and each way a resource read is refused, as JSON-RPC errors."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib.metadata import version
from typing import Any, cast

import anyio
import pytest
from mcp import ClientSession
from mcp.shared.exceptions import McpError
from mcp.shared.memory import create_client_server_memory_streams
from mcp.types import ErrorData, InitializeResult
from pydantic import AnyUrl

from contracts.scenes import Head
from services.doors.core.ownership import own_scene
from services.doors.mcp.door import Door
from services.doors.mcp.server import build_server, local_user

HEADS = {
    owner or "legacy": Head(
        scene_id=owner or "legacy", revision=1, scene_hash="h", object_name="o", epoch=1,
        owner=owner,
    )
    for owner in ("ana", "ben", "")
}  # fmt: skip


class Shelf:
    """The reads the resources make, on three scenes named for their owners ("legacy"
    has none); the catalog fails with ``catalog_fails``, the node catalog always."""

    def __init__(self, catalog_fails: Exception | None = None) -> None:
        self.catalog_fails = catalog_fails

    async def catalog(self) -> bytes:
        if self.catalog_fails is not None:
            raise self.catalog_fails
        return b"{}"

    async def nodes(self) -> bytes:
        raise RuntimeError("cannot open /srv/blendmesh/var/secret.json")

    async def inspection(self, scene_id: str, user: str) -> bytes:
        own_scene(HEADS.get(scene_id), scene_id, user)
        return b'{"objects": []}'


@asynccontextmanager
async def connected(
    shelf: Shelf | None = None,
) -> AsyncIterator[tuple[ClientSession, InitializeResult]]:
    """A host's session with the server, run as ``serve_stdio`` runs it, and what the
    server answered to ``initialize``."""
    server = build_server(cast(Door, shelf or Shelf()), local_user("ana"))
    async with (
        create_client_server_memory_streams() as (client, (read, write)),
        anyio.create_task_group() as tasks,
    ):
        tasks.start_soon(server.run, read, write, server.create_initialization_options())
        async with ClientSession(*client) as session:
            yield session, await session.initialize()
        tasks.cancel_scope.cancel()


@asynccontextmanager
async def host(shelf: Shelf | None = None) -> AsyncIterator[ClientSession]:
    async with connected(shelf) as (session, _):
        yield session


async def refused(session: ClientSession, uri: str) -> ErrorData:
    with pytest.raises(McpError) as caught:
        await session.read_resource(AnyUrl(uri))
    return caught.value.error


def without_uri(error: ErrorData) -> dict[str, Any]:
    return {**error.model_dump(), "data": None}


async def test_mcp_server_when_initialized_names_blendmesh_version() -> None:
    async with connected() as (_, initialized):
        pass
    assert initialized.serverInfo.name == "blendmesh"
    assert initialized.serverInfo.version == version("blendmesh") != version("mcp")


async def test_resource_when_unknown_or_anothers_or_ownerless_answers_the_same_32002() -> None:
    async with host() as session:
        mine = await session.read_resource(AnyUrl("blendmesh://scenes/ana"))
        theirs = await refused(session, "blendmesh://scenes/ben")
        legacy = await refused(session, "blendmesh://scenes/legacy")
        unknown = await refused(session, "blendmesh://scenes/never")
        elsewhere = await refused(session, "blendmesh://elsewhere")
    assert mine.contents
    assert (theirs.code, theirs.message) == (-32002, "Resource not found")
    assert theirs.data == {"uri": "blendmesh://scenes/ben"}
    assert without_uri(theirs) == without_uri(legacy) == without_uri(unknown)
    assert without_uri(elsewhere) == without_uri(unknown)


@pytest.mark.clause("001-§parse.2")
async def test_resource_when_scene_id_malformed_answers_32602() -> None:
    async with host() as session:
        dotted = await refused(session, "blendmesh://scenes/a.b")
        empty = await refused(session, "blendmesh://scenes/")
    assert dotted.code == empty.code == -32602
    assert "scene_id" in dotted.message and "a.b" not in dotted.message


async def test_resource_when_mesh_does_not_answer_answers_32603_unavailable() -> None:
    async with host(Shelf(catalog_fails=TimeoutError("nats: timeout"))) as session:
        error = await refused(session, "blendmesh://catalog")
    assert error.code == -32603
    assert error.message.startswith("Unavailable: the mesh did not answer")


async def test_resource_when_read_fails_unexpectedly_answers_32603_without_detail() -> None:
    async with host() as session:
        error = await refused(session, "blendmesh://nodes")
        still = await session.read_resource(AnyUrl("blendmesh://catalog"))
    assert error.code == -32603 and "secret" not in error.message and "/srv" not in error.message
    assert still.contents
