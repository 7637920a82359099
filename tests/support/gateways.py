"""A module's gateway on its mesh: ``gateway = gateway_fixture(tokens)`` beside a module
``mesh`` fixture yields the gateway's URL (with ``path``: ``/mcp`` for the MCP door), on the
module's event loop; ``mcp_door`` opens an MCP session on it as a token's user."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest_asyncio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from services.doors.cli.mesh import Mesh
from services.doors.gateway.app import GatewayServer, create_app
from services.doors.gateway.auth import Tokens
from services.runtime.service.host import Bus
from tests.support.checked_session import CheckedSession


def gateway_fixture(tokens: dict[str, str], run_timeout: float = 120, path: str = "") -> Any:
    @pytest_asyncio.fixture(scope="module", loop_scope="module", name="gateway")
    async def gateway(mesh: tuple[Mesh, Bus]) -> AsyncIterator[str]:
        app = create_app(mesh[0].settings, mesh[1], Tokens(tokens), run_timeout=run_timeout)
        server = GatewayServer(app, port=0)
        url = await server.start()
        try:
            yield f"{url}{path}"
        finally:
            await server.stop()

    return gateway


@asynccontextmanager
async def mcp_door(url: str, token: str) -> AsyncIterator[ClientSession]:
    """An initialised MCP session on the gateway's ``/mcp`` at ``url``, as ``token``'s user;
    a run may take minutes on a busy machine, so reads wait that long."""
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30, read=300)) as http,
        streamable_http_client(url, http_client=http) as (read, write, _),
        CheckedSession(read, write) as session,
    ):
        await session.initialize()
        yield session
