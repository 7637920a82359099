"""After a run that committed, the MCP door waits a little for the preview the executor
renders once the result is out, when the result says one is rendered; a preview that never
comes leaves the one it had (real NATS)."""

from __future__ import annotations

import asyncio
import base64
import time
from pathlib import Path

import mcp.types as types
import pytest

from contracts.receipts import RunResult
from services.doors.core.client import MeshClient
from services.doors.core.run_view import RunView
from services.doors.mcp import approval
from services.doors.mcp.door import Door
from services.executor.adapters.previews import ObjectStorePreviews
from services.executor.adapters.scene_store import JetStreamSceneStore
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings

pytestmark = pytest.mark.integration

OLD = b"\x89PNG\r\n\x1a\nbefore the run"
NEW = b"\x89PNG\r\n\x1a\nafter the run"


async def anas_scene(bus: Bus, settings: Settings, tmp_path: Path) -> Door:
    blend = tmp_path / "s.blend"
    await asyncio.to_thread(blend.write_bytes, b"BLENDER-v400 a scene")
    await JetStreamSceneStore(bus.js, bus.prefix).commit("s1", blend, "h1", None, 1, owner="ana")
    await ObjectStorePreviews(bus.js, bus.prefix).put("s1", OLD)
    return Door(settings, bus, MeshClient(bus))


async def rendered_later(bus: Bus) -> None:
    """The executor's picture of the new revision, stored 0.3 s from now."""
    await asyncio.sleep(0.3)
    await ObjectStorePreviews(bus.js, bus.prefix).put("s1", NEW)


async def test_fresh_preview_when_rendered_while_waiting_returns_the_new_one(
    bus: Bus, settings: Settings, tmp_path: Path
) -> None:
    door = await anas_scene(bus, settings, tmp_path)
    rendering = asyncio.create_task(rendered_later(bus))
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


def committed_run(renders_preview: bool) -> RunView:
    """Ana's run that committed a new revision of s1; the executor renders its picture
    or renders none, as ``renders_preview`` says."""
    return RunView.of_result(
        RunResult(
            run_id="r1",
            request_id="q1",
            thread_id="t1",
            scene_id="s1",
            user="ana",
            status="completed",
            scene_hash="h2",
            renders_preview=renders_preview,
        )
    )


def images(answer: types.CallToolResult) -> list[str]:
    return [c.data for c in answer.content if isinstance(c, types.ImageContent)]


@pytest.mark.parametrize(("renders", "shown"), [(True, [NEW]), (False, [])])
async def test_run_answer_waits_for_the_new_picture_only_when_one_is_rendered(
    bus: Bus, settings: Settings, tmp_path: Path, renders: bool, shown: list[bytes]
) -> None:
    # A picture of the new revision lands 0.3 s after the answer is asked for. A mesh
    # that renders none (BLENDMESH_PREVIEWS=0) made every run's answer wait the whole
    # 5 s for it and then show the older picture of a scene that is no more.
    door = await anas_scene(bus, settings, tmp_path)
    rendering = asyncio.create_task(rendered_later(bus))
    answer = await approval.answer_run(door, "ana", committed_run(renders), OLD, committed=True)
    await rendering
    assert images(answer) == [base64.b64encode(png).decode() for png in shown]
    assert answer.isError is False


async def test_run_answer_when_nothing_committed_shows_the_scenes_picture(
    bus: Bus, settings: Settings, tmp_path: Path
) -> None:
    door = await anas_scene(bus, settings, tmp_path)
    answer = await approval.answer_run(door, "ana", committed_run(False), None, committed=False)
    assert images(answer) == [base64.b64encode(OLD).decode()]
