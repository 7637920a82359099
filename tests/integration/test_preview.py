"""Integration tests: preview renders in a real bpy bridge, headless, leave the scene alone."""

from __future__ import annotations

import os
import struct
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from contracts.bridge import Preview, PreviewParams
from services.executor.adapters.bridge_client import BridgeError, BridgeProcess

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(120),
]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def bridge() -> AsyncIterator[BridgeProcess]:
    proc = BridgeProcess()
    await proc.start()
    await proc.call_tool("object.create", {"primitive": "cube", "name": "Box"}, "p1")
    await proc.call_tool(
        "object.create", {"primitive": "monkey", "location": [3, 0, 1]}, mcp_call_id="p2"
    )
    yield proc
    await proc.close()


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


async def test_render_preview_when_scene_has_no_camera_writes_png_and_keeps_fingerprint(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    before = await bridge.fingerprint()
    result = await bridge.render_preview(str(tmp_path / "p.png"))
    assert png_size((tmp_path / "p.png").read_bytes()) == (320, 240)
    assert result.engine in ("BLENDER_WORKBENCH", "CYCLES")
    assert await bridge.fingerprint() == before
    saved = await bridge.save(str(tmp_path / "after.blend"))
    assert saved.hash == before


async def test_render_preview_when_size_given_is_fast_and_sized(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    await bridge.render_preview(str(tmp_path / "warm.png"))
    started = time.perf_counter()
    await bridge.render_preview(str(tmp_path / "p.png"), width=200, height=100)
    assert time.perf_counter() - started < 5.0  # about 0.1 s on a laptop CPU
    assert png_size((tmp_path / "p.png").read_bytes()) == (200, 100)


async def test_render_preview_when_cycles_fallback_writes_png_and_keeps_fingerprint(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    before = await bridge.fingerprint()
    params = PreviewParams(path=str(tmp_path / "c.png"), engine="CYCLES")
    result = await bridge.request("blendmesh/scene.render_preview", Preview, params)
    assert result.engine == "CYCLES"
    assert png_size((tmp_path / "c.png").read_bytes()) == (320, 240)
    assert await bridge.fingerprint() == before


async def test_render_preview_when_size_invalid_raises_invalid_params(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    with pytest.raises(BridgeError) as err:
        await bridge.render_preview(str(tmp_path / "p.png"), width=0)
    assert err.value.code == -32602


async def test_bridge_when_started_nice_runs_at_lower_cpu_priority() -> None:
    proc = BridgeProcess(nice=5)
    await proc.start()
    try:
        assert proc.pid is not None
        own = os.getpriority(os.PRIO_PROCESS, 0)
        assert os.getpriority(os.PRIO_PROCESS, proc.pid) == min(own + 5, 19)
        assert await proc.fingerprint()  # and it works as any bridge does
    finally:
        await proc.close()
