"""``blendmesh/scene.render_frame`` in a real bpy bridge, headless: a frame of the given
size and engine, the scene's frame and render settings put back, its fingerprint kept."""

from __future__ import annotations

import struct
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
import pytest
import pytest_asyncio

from contracts.renders import FrameImage, FrameParams, spec_of
from services.executor.adapters.bridge_client import BridgeError, BridgeProcess

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(180),
]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def bridge() -> AsyncIterator[BridgeProcess]:
    proc = BridgeProcess()
    await proc.start()
    await proc.call_tool("object.create", {"primitive": "cube", "name": "Box"}, "f1")
    yield proc
    await proc.close()


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.mark.parametrize("engine", ["cycles", "workbench"])
async def test_render_frame_when_asked_writes_that_frame_and_keeps_the_scene(
    bridge: BridgeProcess, tmp_path: Path, engine: str
) -> None:
    before = await bridge.fingerprint()
    spec = spec_of(1, 48, engine, 1, 40, 24)
    path = tmp_path / f"{engine}.png"
    image = await bridge.render_frame(FrameParams(path=str(path), frame=17, spec=spec), 120)
    assert image.frame == 17 and image.ms > 0
    assert png_size(path.read_bytes()) == (40, 24)
    assert await bridge.fingerprint() == before
    saved = await bridge.save(str(tmp_path / "after.blend"))
    assert saved.hash == before  # frame, engine, size and samples are as they were


class Unchecked(msgspec.Struct, frozen=True):
    """Params as a client that skipped the contract's checks would send them."""

    path: str
    frame: int
    spec: dict[str, object]


async def test_render_frame_when_params_are_out_of_bounds_is_refused_by_the_bridge(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    huge = {"first": 1, "last": 2, "engine": "cycles", "samples": 1,
            "width": 100_000, "height": 100_000}  # fmt: skip
    for spec in (huge, {**huge, "width": 32, "height": 32, "engine": "octane"}):
        bad = Unchecked(path=str(tmp_path / "bad.png"), frame=1, spec=spec)
        with pytest.raises(BridgeError, match="invalid params"):
            await bridge.request("blendmesh/scene.render_frame", FrameImage, bad)
    assert not (tmp_path / "bad.png").exists()
