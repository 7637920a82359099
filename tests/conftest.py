"""Shared fixtures: a real nats-server with JetStream on a temporary store per test."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from services.runtime.server.embedded import EmbeddedNats
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.conformance.marker import refuse_unknown_clauses

TESTS = Path(__file__).parent
# Tests marked by the directory they live in, so `-m "not integration and not e2e"` selects
# the fast tests without each module having to say what it is.
# tests/security holds the red team's findings, most of them on a real mesh; tests/chaos
# kills servers and processes under a running mesh.
MARK_BY_DIRECTORY = {
    "integration": pytest.mark.integration,
    "security": pytest.mark.integration,
    "e2e": pytest.mark.e2e,
    "chaos": pytest.mark.e2e,
}

GEMINI_ENV = (
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GEMINI_BASE_URL",
    "BLENDMESH_PLANNER",
)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker more than the cores. A worker spends part of its time
    waiting for the processes its tests start (nats-server, Blender, the CLI) and for
    JetStream's fsyncs, which a spare worker fills; more workers only add CPU, since each
    collects the whole suite and tests slowed by a busy machine poll and retry longer.
    Measured on two cores, the whole suite: 2 workers 11 min 52 s (930 s of CPU), 3
    workers 10 min 42 s (1,002 s), 4 workers 11 min 25 s (1,104 s)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (cores or 1) + 1


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(TESTS):
            mark = MARK_BY_DIRECTORY.get(item.path.relative_to(TESTS).parts[0])
            if mark is not None:
                item.add_marker(mark)
    refuse_unknown_clauses(items)


@pytest.fixture(scope="session", autouse=True)
def _offline_planner() -> Iterator[None]:
    """Tests never reach the real Gemini API: a developer's key is hidden from them (and
    from the commands they start), so the default planner is the offline one."""
    with pytest.MonkeyPatch.context() as env:
        for name in GEMINI_ENV:
            env.delenv(name, raising=False)
        yield


@pytest.fixture(scope="session", autouse=True)
def _no_previews() -> Iterator[None]:
    """The commands tests start render no previews unless a test turns them on
    (``BLENDMESH_PREVIEWS=1``): each new revision's picture and 3D model take a second
    Blender, about a seventh of the suite's CPU time, and only the tests of previews look
    at them. Meshes started in the test process say so in their ``Settings``."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("BLENDMESH_PREVIEWS", "0")
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
