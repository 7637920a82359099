"""After an approved run the MCP door waits a little for the preview the executor renders
once the result is out; a preview that never comes leaves the one it had (real NATS)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from services.doors.core.client import MeshClient
from services.doors.mcp.door import Door
from services.executor.adapters.previews import ObjectStorePreviews
from services.executor.adapters.scene_store import JetStreamSceneStore
from services.runtime.host import Bus
from services.runtime.settings import Settings

pytestmark = pytest.mark.integration

OLD = b"\x89PNG\r\n\x1a\nbefore the run"
NEW = b"\x89PNG\r\n\x1a\nafter the run"


async def anas_scene(bus: Bus, settings: Settings, tmp_path: Path) -> Door:
    blend = tmp_path / "s.blend"
    await asyncio.to_thread(blend.write_bytes, b"BLENDER-v400 a scene")
    await JetStreamSceneStore(bus.js, bus.prefix).commit("s1", blend, "h1", None, 1, owner="ana")
    await ObjectStorePreviews(bus.js, bus.prefix).put("s1", OLD)
    return Door(settings, bus, MeshClient(bus))


async def test_fresh_preview_when_rendered_while_waiting_returns_the_new_one(
    bus: Bus, settings: Settings, tmp_path: Path
) -> None:
    door = await anas_scene(bus, settings, tmp_path)

    async def rendered_later() -> None:
        await asyncio.sleep(0.3)
        await ObjectStorePreviews(bus.js, bus.prefix).put("s1", NEW)

    rendering = asyncio.create_task(rendered_later())
    assert await door.fresh_preview("s1", "ana", OLD, wait=10) == NEW
    await rendering


async def test_fresh_preview_when_none_comes_within_the_wait_returns_the_stale_one(
    bus: Bus, settings: Settings, tmp_path: Path
) -> None:
    door = await anas_scene(bus, settings, tmp_path)
    began = time.monotonic()
    assert await door.fresh_preview("s1", "ana", OLD, wait=0.3) == OLD
    assert 0.3 <= time.monotonic() - began < 3


async def test_fresh_preview_of_another_users_scene_is_none(
    bus: Bus, settings: Settings, tmp_path: Path
) -> None:
    door = await anas_scene(bus, settings, tmp_path)
    assert await door.fresh_preview("s1", "ben", None, wait=0.2) is None
