"""The collector on a real nats-server: retention past the policy, tags, expired result
images and uploads, and, while runs keep committing, nothing a kept revision names lost."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest
from nats.js.errors import ObjectNotFoundError

from contracts.scenes import Head
from services.executor.adapters.collector import Collected, Collector
from services.executor.adapters.scene_store import JetStreamSceneStore
from services.executor.adapters.uploads import ObjectStoreUploads
from services.executor.domain.retention import Retention
from services.runtime.service.host import Bus

BASE = b"BLENDER-v500" + random.Random(21).randbytes(1_200_000)
# A few edits at a few places: revisions come back to content an earlier one had, so a
# commit finds chunks the collector is about to delete.
PATCHES = [(at, bytes([n]) * 64) for at in (100_000, 600_000, 1_100_000) for n in range(3)]


def variant(rng: random.Random) -> bytes:
    data = BASE
    for at, patch in rng.sample(PATCHES, 2):
        data = data[:at] + patch + data[at + len(patch) :]
    return data


async def commit(store: JetStreamSceneStore, tmp: Path, scene: str, data: bytes,
                 parent: Head | None) -> Head:  # fmt: skip
    path = tmp / f"{scene}-{parent.revision if parent else 0}.blend"
    await asyncio.to_thread(path.write_bytes, data)
    return await store.commit(scene, path, "h" * 16, parent, 1, owner="ann")


async def test_collect_when_past_keep_removes_old_revisions_but_not_tagged_ones(
    bus: Bus, tmp_path: Path
) -> None:
    store = JetStreamSceneStore(bus.js, bus.prefix)
    rng = random.Random(1)
    heads, contents = [], []
    head = None
    for _ in range(5):
        contents.append(variant(rng))
        head = await commit(store, tmp_path, "s", contents[-1], head)
        heads.append(head)
    collector = Collector(bus.js, bus.prefix, Retention(keep=2, chunk_grace=0.0))
    await collector.tags.tag("s", 2, "approved-look", by="ann")
    assert await collector.tags.of("s") == {"approved-look": 2}
    got = await collector.collect()
    assert got.revisions == 2 and got.chunks_skipped == ""
    left = [n for s, n, _ in await store.revisions() if s == "s"]
    assert left == [2, 4, 5]
    for n in left:
        assert await JetStreamSceneStore(bus.js, bus.prefix).read(heads[n - 1]) == contents[n - 1]
    with pytest.raises(ObjectNotFoundError):
        await store.read(heads[0])
    assert await collector.tags.untag("s", "approved-look")
    assert not await collector.tags.untag("s", "approved-look")
    assert (await collector.collect()).revisions == 1  # revision 2 goes once untagged


async def test_collect_when_chunks_are_unnamed_and_old_deletes_them_and_frees_bytes(
    bus: Bus, tmp_path: Path
) -> None:
    store = JetStreamSceneStore(bus.js, bus.prefix)
    first = await commit(store, tmp_path, "s", BASE, None)
    other = b"BLENDER-v500" + random.Random(5).randbytes(400_000)
    await commit(store, tmp_path, "s", other, first)  # nothing of BASE is left in it
    got = await Collector(bus.js, bus.prefix, Retention(keep=1, chunk_grace=0.0)).collect()
    assert got.revisions == 1 and got.chunks >= 10 and got.chunk_bytes >= 1_000_000
    assert await JetStreamSceneStore(bus.js, bus.prefix).read(await store.head("s")) == other


async def test_collect_when_chunk_is_young_keeps_it(bus: Bus, tmp_path: Path) -> None:
    store = JetStreamSceneStore(bus.js, bus.prefix)
    first = await commit(store, tmp_path, "s", BASE, None)
    await commit(store, tmp_path, "s", b"BLENDER" + bytes(70_000), first)
    got = await Collector(bus.js, bus.prefix, Retention(keep=1, chunk_grace=3600)).collect()
    assert (got.revisions, got.chunks) == (1, 0)


async def test_collect_when_result_images_and_uploads_expired_removes_only_those(
    bus: Bus, tmp_path: Path
) -> None:
    store = JetStreamSceneStore(bus.js, bus.prefix)
    image = tmp_path / "image.blend"
    image.write_bytes(b"BLENDER image")
    await store.put_result("_results/abc", image)
    uploads = ObjectStoreUploads(bus.js, bus.prefix)
    blob = await uploads.stage("ann", b"BLENDER upload")
    head = await commit(store, tmp_path, "s", BASE, None)
    kept = await Collector(
        bus.js, bus.prefix, Retention(result_ttl=3600, upload_ttl=3600)
    ).collect()
    assert kept == Collected()
    expire = Retention(result_ttl=0.001, upload_ttl=0.001)
    got = await Collector(bus.js, bus.prefix, expire).collect()
    assert (got.results, got.uploads, got.revisions) == (1, 1, 0)
    assert not await store.fetch_result("_results/abc", tmp_path / "back.blend")
    assert await uploads.get("ann", blob) is None
    assert await store.read(head) == BASE


async def test_collect_when_runs_commit_meanwhile_loses_nothing_a_kept_revision_names(
    bus: Bus, tmp_path: Path
) -> None:
    # A grace of one second: chunks age past it during the test, so the collector deletes
    # for real while commits reuse the same content.
    policy = Retention(keep=2, chunk_grace=1.0)
    written: dict[tuple[str, int], bytes] = {}
    heads: dict[tuple[str, int], Head] = {}
    stop = asyncio.Event()

    async def runs(scene: str, seed: int) -> None:
        store = JetStreamSceneStore(bus.js, bus.prefix, chunk_grace=policy.chunk_grace)
        rng, head = random.Random(seed), None
        for _ in range(14):
            data = variant(rng)
            head = await commit(store, tmp_path, scene, data, head)
            written[(scene, head.revision)], heads[(scene, head.revision)] = data, head
            await asyncio.sleep(rng.uniform(0.02, 0.2))  # the runs still outlast the grace

    async def collecting() -> list[Collected]:
        collector, done = Collector(bus.js, bus.prefix, policy), []
        while not stop.is_set():
            done.append(await collector.collect())
            await asyncio.sleep(0.1)
        return done

    gc = asyncio.create_task(collecting())
    await asyncio.gather(*(runs(scene, seed) for seed, scene in enumerate(("a", "b", "c"))))
    await asyncio.sleep(1.2)  # past the grace: the last collections may delete anything
    stop.set()
    collected = await gc
    assert sum(c.revisions for c in collected) >= 20
    assert sum(c.chunks for c in collected) >= 1
    reader = JetStreamSceneStore(bus.js, bus.prefix)
    left = await reader.revisions()
    assert {(s, n) for s, n, _ in left} == {(s, n) for s in "abc" for n in (13, 14)}
    for scene, n, _ in left:
        assert await reader.read(heads[(scene, n)]) == written[(scene, n)]
    for (_, n), head in heads.items():  # a collected revision is gone whole, manifest first
        if n < 13:
            with pytest.raises(ObjectNotFoundError):
                await reader.read(head)
