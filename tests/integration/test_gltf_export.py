"""The bridge's glTF export in a real bpy, headless: a GLB of the scene's meshes, bounded
in size, that leaves the scene as it was."""

from __future__ import annotations

import json
import struct
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

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
    await proc.call_tool("object.create", {"primitive": "cube", "name": "Box"}, "g1")
    await proc.call_tool(
        "object.create", {"primitive": "monkey", "name": "Head", "location": [3, 0, 1]}, "g2"
    )
    yield proc
    await proc.close()


def glb_json(data: bytes) -> dict[str, object]:
    """The JSON chunk of a GLB (header: magic, version, length; then chunks)."""
    magic, version, length = struct.unpack("<4sII", data[:12])
    assert (magic, version, length) == (b"glTF", 2, len(data))
    size, kind = struct.unpack("<I4s", data[12:20])
    assert kind == b"JSON"
    parsed: dict[str, object] = json.loads(data[20 : 20 + size])
    return parsed


async def test_export_gltf_when_scene_has_meshes_writes_them_and_keeps_fingerprint(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    before = await bridge.fingerprint()
    done = await bridge.export_gltf(str(tmp_path / "s.glb"), 16 * 1024 * 1024)
    data = (tmp_path / "s.glb").read_bytes()
    assert done.bytes == len(data) and done.objects == 2
    nodes = glb_json(data)["nodes"]
    assert isinstance(nodes, list)
    assert {n["name"] for n in nodes} == {"Box", "Head"}
    assert await bridge.fingerprint() == before


async def test_export_gltf_when_over_the_limit_is_refused_and_leaves_no_file(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    with pytest.raises(BridgeError, match="over the 1000 allowed"):
        await bridge.export_gltf(str(tmp_path / "big.glb"), 1000)
    assert not (tmp_path / "big.glb").exists()


async def test_export_gltf_when_triangles_alone_exceed_the_limit_is_refused_before_exporting(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    # The cube's 12 and the monkey's 968 triangles: 5,880 index bytes at the least.
    with pytest.raises(BridgeError, match=r"would be at least 5880 bytes .* over the 5000 allowed"):
        await bridge.export_gltf(str(tmp_path / "big.glb"), 5000)
    assert not (tmp_path / "big.glb").exists()


async def test_export_gltf_when_only_the_written_file_exceeds_the_limit_is_refused_after_it(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    # Over the triangles' bound, under the file's size (positions and normals come too).
    with pytest.raises(BridgeError, match=r"the scene as glTF is \d+ bytes, over the 6000 allowed"):
        await bridge.export_gltf(str(tmp_path / "big.glb"), 6000)
    assert not (tmp_path / "big.glb").exists()
