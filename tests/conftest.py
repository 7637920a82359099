"""Shared fixtures: a real nats-server with JetStream on a temporary store per test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from services.runtime.embedded import EmbeddedNats
from services.runtime.host import Bus
from services.runtime.settings import Settings

GEMINI_ENV = (
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GEMINI_BASE_URL",
    "BLENDMESH_PLANNER",
)


@pytest.fixture(scope="session", autouse=True)
def _offline_planner() -> Iterator[None]:
    """Tests never reach the real Gemini API: a developer's key is hidden from them (and
    from the commands they start), so the default planner is the offline one."""
    with pytest.MonkeyPatch.context() as env:
        for name in GEMINI_ENV:
            env.delenv(name, raising=False)
        yield


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
