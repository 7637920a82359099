"""A module's gateway on its mesh: ``gateway = gateway_fixture(tokens)`` beside a module
``mesh`` fixture yields the gateway's URL, on the module's event loop."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio

from services.doors.cli.mesh import Mesh
from services.doors.gateway.app import GatewayServer, create_app
from services.doors.gateway.auth import Tokens
from services.runtime.service.host import Bus


def gateway_fixture(tokens: dict[str, str], run_timeout: float = 120) -> Any:
    @pytest_asyncio.fixture(scope="module", loop_scope="module", name="gateway")
    async def gateway(mesh: tuple[Mesh, Bus]) -> AsyncIterator[str]:
        app = create_app(mesh[0].settings, mesh[1], Tokens(tokens), run_timeout=run_timeout)
        server = GatewayServer(app, port=0)
        url = await server.start()
        try:
            yield url
        finally:
            await server.stop()

    return gateway
