"""A started embedded mesh with a bus logged in as a client, for integration fixtures."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from services.mesh import Mesh
from services.runtime.access import CLIENT
from services.runtime.host import Bus
from services.runtime.settings import Settings


@asynccontextmanager
async def client_mesh(
    settings: Settings, name: str = "test-client"
) -> AsyncIterator[tuple[Mesh, Bus]]:
    """Start every service on ``settings``; stop them, and the client's bus, on exit."""
    running = Mesh(settings)
    url = await running.start()
    try:
        bus = await Bus.open(url, settings.prefix, name, running.login(CLIENT))
        try:
            yield running, bus
        finally:
            await bus.close()
    finally:
        await running.stop()
