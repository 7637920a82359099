"""Shared fixtures: a real nats-server with JetStream on a temporary store per test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from services.runtime.embedded import EmbeddedNats
from services.runtime.host import Bus
from services.runtime.settings import Settings


@pytest.fixture
async def nats_url(tmp_path: Path) -> AsyncIterator[str]:
    server = EmbeddedNats(tmp_path / "nats")
    url = await server.start()
    try:
        yield url
    finally:
        await server.stop()


@pytest.fixture
async def bus(nats_url: str) -> AsyncIterator[Bus]:
    b = await Bus.open(nats_url, "bmtest", "test")
    try:
        yield b
    finally:
        await b.close()


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home", prefix="bmtest", user="tester")
