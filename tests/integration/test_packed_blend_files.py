"""Scenes Blender saves uncompressed, stored packed (ADR 0035), load back in a real Blender
as the scene they were: a chunked revision, a small whole one, and a result image."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from services.executor.adapters import packing
from services.executor.adapters.bridge_client import BridgeProcess
from services.executor.adapters.scene_store import WHOLE_BELOW, JetStreamSceneStore
from services.executor.domain.results import ResultImages
from services.runtime.nats.objects import read_stored
from services.runtime.service.host import Bus
from tests.support.bridges import ok


@pytest.fixture
async def bridge() -> AsyncIterator[BridgeProcess]:
    process = BridgeProcess()
    await process.start()
    try:
        yield process
    finally:
        await process.close()


async def test_revisions_and_result_images_saved_uncompressed_load_back_as_saved(
    bus: Bus, bridge: BridgeProcess, tmp_path: Path
) -> None:
    # A small whole revision: the factory scene and a cube, under WHOLE_BELOW uncompressed.
    await ok(bridge, "object.create", primitive="cube", name="Box")
    small_file, big_file = tmp_path / "small.blend", tmp_path / "big.blend"
    small = await bridge.save(str(small_file), compress=False)
    assert small_file.stat().st_size < WHOLE_BELOW
    assert not small_file.read_bytes().startswith(b"\x28\xb5\x2f\xfd")  # zstd's magic
    store = JetStreamSceneStore(bus.js, bus.prefix)
    one = await store.commit("s", small_file, small.hash, None, 1, "ann")
    # A chunked one: enough geometry that the uncompressed file passes WHOLE_BELOW.
    await ok(bridge, "object.create", primitive="monkey", name="Suzanne")
    await ok(bridge, "modifier.add", object="Suzanne", type="SUBSURF", properties={"levels": 3})
    await ok(bridge, "modifier.apply", object="Suzanne", modifier="Subdivision")
    big = await bridge.save(str(big_file), compress=False)
    assert big_file.stat().st_size >= store.whole_below
    two = await store.commit("s", big_file, big.hash, one, 1, "ann")
    assert await store.manifest(two.object_name) is not None
    whole = await read_stored(bus.js, store.bucket, one.object_name, 1 << 22)
    assert whole is not None and whole[0].headers == packing.PACKED

    fresh = JetStreamSceneStore(bus.js, bus.prefix)
    for head, saved, file in ((one, small, small_file), (two, big, big_file)):
        dest = tmp_path / "fetched" / f"{head.revision}.blend"
        await fresh.fetch(head, dest)
        assert dest.read_bytes() == file.read_bytes()
        await bridge.reset()
        assert await bridge.load(str(dest)) == saved.hash

    images = ResultImages(store, bridge, tmp_path / "results")
    name = await images.keep("run-1/op-2")
    stored = await read_stored(bus.js, store.bucket, name, 1 << 24)
    assert stored is not None and stored[0].headers == packing.PACKED
    assert len(stored[1]) < big_file.stat().st_size / 2  # uncompressed save, packed
    await bridge.reset()
    assert await images.load(name) == big.hash
