"""Small files that would make Blender allocate gigabytes, against a real bridge: each is
refused naming the limit and its setting, and the bridge's memory stays near its own.

The glTF bombs are refused in ``contracts/gltf_sizes.py`` before any Blender sees them
(tests/unit/contracts/test_gltf_sizes.py, and the executor in
test_asset_imports_hostile.py); here the bridge's own defences: the .blend pre-scan's
bounded inflation, the geometry budget on what an import made, and an importer's
failure told without its traceback.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from contracts.bridge import INVALID_PARAMS
from contracts.views import AssetParams
from services.bridge.blendfiles.blendfile import DEFAULT_MAX_UNPACKED_BYTES, UNPACKED_SETTING
from services.executor.adapters.bridge_client import BridgeError, BridgeProcess
from tests.support.asset_files import glb, gltf_document, points_glb, zstd_blend_bomb

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(180),
]
GIB = 1024**3
SERVER_ERROR = -32000  # the scene may have changed: the executor restores its checkpoint


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def bridge() -> AsyncIterator[BridgeProcess]:
    process = BridgeProcess(env={**os.environ, "BLENDMESH_MAX_OBJECT_VERTICES": "1000"})
    await process.start()
    yield process
    await process.close()


def peak_bytes(pid: int | None) -> int:
    """The most resident memory the process has had (VmHWM)."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


async def test_blend_of_130_kb_holding_gigabytes_is_refused_and_never_inflated(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    bomb = zstd_blend_bomb(tmp_path / "bomb.blend", DEFAULT_MAX_UNPACKED_BYTES + GIB // 2)
    assert bomb.stat().st_size < 1024 * 1024
    with pytest.raises(BridgeError) as info:
        await bridge.load(str(bomb))
    assert info.value.code == INVALID_PARAMS
    said = str(info.value)
    assert f"more than {DEFAULT_MAX_UNPACKED_BYTES:,} bytes once decompressed" in said
    assert UNPACKED_SETTING in said and str(tmp_path) not in said
    assert bridge.alive
    assert peak_bytes(bridge.pid) < GIB  # it streamed; a bridge idles near 0.3 GiB


async def test_import_that_makes_more_vertices_than_the_budget_is_refused_naming_it(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    path = tmp_path / "points.glb"
    path.write_bytes(points_glb(5000))
    with pytest.raises(BridgeError) as info:
        await bridge.import_asset(AssetParams(path=str(path), format="glb", collection="Props"))
    assert info.value.code == SERVER_ERROR
    said = str(info.value)
    assert "5,000 vertices, over the 1,000" in said and "BLENDMESH_MAX_OBJECT_VERTICES" in said


async def test_import_within_the_budget_is_taken(bridge: BridgeProcess, tmp_path: Path) -> None:
    await bridge.reset()
    path = tmp_path / "few.glb"
    path.write_bytes(points_glb(500))
    done = await bridge.import_asset(AssetParams(path=str(path), format="glb", collection="P"))
    assert done.objects


async def test_importer_that_raises_is_told_without_traceback_or_paths(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    await bridge.reset()
    doc = gltf_document()
    doc["meshes"][0]["primitives"][0]["attributes"]["POSITION"] = 4  # the importer's IndexError
    path = tmp_path / "nomesh.glb"
    path.write_bytes(glb(doc))
    with pytest.raises(BridgeError) as info:
        await bridge.import_asset(AssetParams(path=str(path), format="glb", collection="P"))
    said = str(info.value)
    assert "IndexError" in said
    told = said.split(": ", 1)[1]  # after the method's name
    assert "Traceback" not in told and "site-packages" not in told and "/" not in told
    assert bridge.alive


async def test_glb_claiming_billions_of_elements_is_refused_by_the_bridge_itself(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    doc = gltf_document()
    doc["accessors"][0]["count"] = 3_000_000_000
    path = tmp_path / "claims.glb"
    path.write_bytes(glb(doc))
    with pytest.raises(BridgeError) as info:
        await bridge.import_asset(AssetParams(path=str(path), format="glb", collection="P"))
    assert info.value.code == INVALID_PARAMS  # refused before the scene was touched
    assert "more than its buffer view holds" in str(info.value)
    assert peak_bytes(bridge.pid) < GIB


async def test_import_that_needs_more_memory_than_an_import_may_use_is_refused_naming_it(
    tmp_path: Path,
) -> None:
    capped = BridgeProcess(env={**os.environ, "BLENDMESH_IMPORT_MEMORY_MIB": "8"})
    await capped.start()
    try:
        path = tmp_path / "dense.glb"
        path.write_bytes(points_glb(1_000_000))  # 12 MB of real positions: sizes are backed
        params = AssetParams(path=str(path), format="glb", collection="P")
        with pytest.raises(BridgeError) as info:
            await capped.import_asset(params)
        said = str(info.value)
        assert "ran out of the 8 MiB an import may use" in said
        assert "BLENDMESH_IMPORT_MEMORY_MIB" in said
        assert capped.alive
        await capped.reset()  # the limit is lifted again once the import is over
        small = tmp_path / "small.glb"
        small.write_bytes(points_glb(200))
        params = AssetParams(path=str(small), format="glb", collection="P")
        assert (await capped.import_asset(params)).objects
    finally:
        await capped.close()
