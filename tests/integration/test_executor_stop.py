"""An executor that stops ends its two Blender processes side by side (real mesh, real
bpy): each takes a second or so to exit, and one after the other every ``blendmesh up``
stop took their sum."""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path

import pytest

from services.doors.cli.mesh import Mesh
from services.doors.core.client import MeshClient
from services.doors.core.requests import build_request
from services.executor.adapters.previews import ObjectStorePreviews
from services.executor.adapters.supervisor import SupervisedBridge
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.bridges import bridge_pids

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

PREFIX = "bmstop"


async def test_executor_when_stopped_closes_its_run_and_preview_blenders_together(
    tmp_path: Path, nats_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    closing: list[tuple[float, float]] = []  # when each bridge's close began and ended
    close = SupervisedBridge.close

    begun = asyncio.Event()
    waiting: list[float] = []

    async def timed(self: SupervisedBridge) -> None:
        if not self.alive:  # the render jobs' Blender: never started without a job
            await close(self)
            return
        loop = asyncio.get_running_loop()
        began = loop.time()
        waiting.append(began)
        if len(waiting) == 2:
            begun.set()
        # A Blender may exit in a tenth of a second: each close waits (10 s at most) for the
        # other to begin, so closes one after the other show as such however fast either is.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(10):
                await begun.wait()
        await close(self)
        closing.append((began, loop.time()))

    monkeypatch.setattr(SupervisedBridge, "close", timed)
    settings = Settings(home=tmp_path / "home", nats_url=nats_url, prefix=PREFIX, user="ana")
    mesh = Mesh(settings)
    await mesh.start()
    try:
        bus = await Bus.open(mesh.url, PREFIX, "test")
        try:
            request = build_request(user="ana", scene_id="both", prompt="add a cube named Box")
            result = await MeshClient(bus).run(request, timeout=120)
            assert result.status == "completed", result.message
            previews = ObjectStorePreviews(bus.js, PREFIX)
            for _ in range(1200):  # the preview's Blender starts for the first picture
                if await previews.get("both") is not None:
                    break
                await asyncio.sleep(0.1)
            assert await previews.get("both") is not None
        finally:
            await bus.close()
        assert len(bridge_pids(os.getpid())) == 2  # the runs' Blender and the previews'
    finally:
        await mesh.stop()
    assert bridge_pids(os.getpid()) == []
    [(_, first_ended), (second_began, _)] = sorted(closing)
    assert second_began < first_ended, f"closed one after the other: {closing}"


async def test_executor_when_closing_a_blender_fails_still_closes_the_other_and_says_so(
    tmp_path: Path, nats_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    closed: list[SupervisedBridge] = []
    close = SupervisedBridge.close

    async def failing(self: SupervisedBridge) -> None:
        await close(self)
        closed.append(self)
        raise RuntimeError("the bridge would not say goodbye")

    monkeypatch.setattr(SupervisedBridge, "close", failing)
    settings = Settings(
        home=tmp_path / "home", nats_url=nats_url, prefix=PREFIX, user="ana", bridges=2
    )
    mesh = Mesh(settings, services=["executor"])
    await mesh.start()
    try:
        assert len(bridge_pids(os.getpid())) == 1  # the runs' Blender; no picture asked yet
    finally:
        with caplog.at_level("ERROR", "blendmesh"):
            await mesh.stop()
    # The runs' two (the spare never started), the previews' and the render jobs' (never
    # started): no failure skipped the closes after it.
    assert len(closed) == 4
    assert bridge_pids(os.getpid()) == []
    assert "executor: closing failed" in caplog.text
    assert "the bridge would not say goodbye" in caplog.text
