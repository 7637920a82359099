"""Revisions stored by content (ADR 0021) on a real nats-server: byte-for-byte round trips,
whole-file revisions from before still read, chunks never shared across users, and a
damaged store said to be damaged."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from contracts import revisions
from contracts.revisions import chunk_name
from contracts.scenes import Head
from services.executor.adapters import packing
from services.executor.adapters.scene_store import JetStreamSceneStore
from services.executor.domain.chunking import RevisionDamaged
from services.runtime.nats.objects import put_object, read_object
from services.runtime.service.host import Bus


def scene_bytes(seed: int, size: int = 3 * 1024 * 1024) -> bytes:
    """Bytes like an uncompressed .blend: a header, then varied but repeatable blocks."""
    rng = random.Random(seed)
    return b"BLENDER-v500" + rng.randbytes(size)


def edited(data: bytes, at: int, patch: bytes) -> bytes:
    return data[:at] + patch + data[at + len(patch) :]


def file_of(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


async def chunk_names(store: JetStreamSceneStore) -> set[str]:
    return {info.name or "" for info in await store.chunks.listing()}


async def test_commit_when_chunked_reads_back_byte_for_byte_and_an_edit_adds_few_chunks(
    bus: Bus, tmp_path: Path
) -> None:
    store = JetStreamSceneStore(bus.js, bus.prefix)
    first = scene_bytes(1)
    one = await store.commit("s", file_of(tmp_path, "1.blend", first), "h1", None, 1, "ann")
    stored = await read_object(bus.js, f"{bus.prefix}_scenes", one.object_name, 1 << 20)
    assert stored is not None and revisions.is_manifest(stored)
    after_first = await chunk_names(store)
    assert len(after_first) >= 20  # 3 MiB in ~64 KiB chunks
    second = edited(first, 1_500_000, b"moved one object")
    two = await store.commit("s", file_of(tmp_path, "2.blend", second), "h2", one, 1, "ann")
    added = await chunk_names(store) - after_first
    assert 1 <= len(added) <= 2  # the chunk around the change, not the file
    assert await store.read(one) == first
    assert await store.read(two) == second
    await store.fetch(two, tmp_path / "out" / "s.blend")
    assert (tmp_path / "out" / "s.blend").read_bytes() == second
    # A fresh store (another executor) reads the same revisions from the server alone.
    other = JetStreamSceneStore(bus.js, bus.prefix)
    assert await other.read(one) == first and await other.read(two) == second


async def test_read_when_revision_was_stored_whole_returns_it_and_a_commit_follows_it(
    bus: Bus, tmp_path: Path
) -> None:
    store = JetStreamSceneStore(bus.js, bus.prefix)
    await store.commit("warm", file_of(tmp_path, "w.blend", b"BLENDERx"), "w", None, 1)
    legacy_bytes = scene_bytes(2, 1_500_000)
    name = "old/00000001-0123456789abcdef"
    await put_object(bus.js, f"{bus.prefix}_scenes", name, legacy_bytes)  # the old format
    legacy = Head(scene_id="old", revision=1, scene_hash="0123456789abcdef",
                  object_name=name, epoch=0)  # fmt: skip
    assert await store.read(legacy) == legacy_bytes
    found = await store.find_revision("old", 1)
    assert found is not None and await store.read(found) == legacy_bytes
    newer_bytes = edited(legacy_bytes, 100, b"edit")
    newer = await store.commit("old", file_of(tmp_path, "n.blend", newer_bytes), "n", legacy, 1)
    assert newer.revision == 2
    assert await store.read(newer) == newer_bytes
    assert await store.read(legacy) == legacy_bytes


async def test_commit_when_two_users_store_the_same_file_shares_no_chunk_object(
    bus: Bus, tmp_path: Path
) -> None:
    store = JetStreamSceneStore(bus.js, bus.prefix)
    data = scene_bytes(3, 2_000_000)
    path = file_of(tmp_path, "same.blend", data)
    ann = await store.commit("ann-scene", path, "h", None, 1, owner="ann")
    bob = await store.commit("bob-scene", path, "h", None, 1, owner="bob")
    names = await chunk_names(store)
    ann_chunks = {n for n in names if n.startswith("ann/")}
    bob_chunks = {n for n in names if n.startswith("bob/")}
    assert ann_chunks and names == ann_chunks | bob_chunks
    digests = {n.partition("/")[2] for n in ann_chunks}
    assert digests == {n.partition("/")[2] for n in bob_chunks}  # same content, own objects
    # Ann's chunks damaged: Bob's scene does not notice, Ann's says so.
    for digest in digests:
        await put_object(bus.js, store.chunks.bucket, chunk_name("ann", digest), b"not it")
    assert await store.read(bob) == data
    with pytest.raises(RevisionDamaged, match="revision 1 of scene ann-scene is damaged"):
        await store.read(ann)


async def test_commit_when_a_users_other_scene_holds_the_chunks_uploads_none(
    bus: Bus, tmp_path: Path
) -> None:
    store = JetStreamSceneStore(bus.js, bus.prefix)
    path = file_of(tmp_path, "a.blend", scene_bytes(4, 2_000_000))
    await store.commit("a", path, "h", None, 1, owner="ann")
    info = await bus.js.stream_info(store.chunks.stream)
    copy = await store.commit("b", path, "h", None, 1, owner="ann")
    assert (await bus.js.stream_info(store.chunks.stream)).state.bytes == info.state.bytes
    assert await store.read(copy) == path.read_bytes()


async def test_read_when_a_chunk_is_missing_names_the_revision_and_the_chunk(
    bus: Bus, tmp_path: Path
) -> None:
    store = JetStreamSceneStore(bus.js, bus.prefix)
    head = await store.commit("s", file_of(tmp_path, "s.blend", scene_bytes(5, 2_000_000)),
                              "h", None, 1, owner="ann")  # fmt: skip
    victim = sorted(await chunk_names(store))[0]
    objects = await bus.js.object_store(store.chunks.bucket)
    await objects.delete(victim)
    with pytest.raises(RevisionDamaged, match=r"chunk [0-9a-f]{16} is not in the store"):
        await JetStreamSceneStore(bus.js, bus.prefix).read(head)


async def test_read_when_manifest_is_not_one_says_the_revision_is_damaged(
    bus: Bus, tmp_path: Path
) -> None:
    store = JetStreamSceneStore(bus.js, bus.prefix)
    head = await store.commit("s", file_of(tmp_path, "s.blend", b"BLENDERxyz"), "h", None, 1)
    forged = revisions.MANIFEST_MAGIC + b',"space":"","size":1,"digest":"md5:x","chunks":[]}'
    await put_object(bus.js, f"{bus.prefix}_scenes", head.object_name, forged)
    with pytest.raises(RevisionDamaged, match="is damaged: the manifest's file digest"):
        await JetStreamSceneStore(bus.js, bus.prefix).read(head)


async def test_delete_if_older_when_a_commit_stored_the_chunk_again_keeps_it(
    bus: Bus, tmp_path: Path
) -> None:
    store = JetStreamSceneStore(bus.js, bus.prefix)
    data = scene_bytes(6, 2_000_000)
    head = await store.commit("s", file_of(tmp_path, "s.blend", data), "h", None, 1, "ann")
    name = sorted(await chunk_names(store))[0]
    seen = await store.chunks.meta(name)
    assert seen is not None
    # A commit stores the chunk again after the collector looked at it: the collector's
    # compare-and-delete names the sequence it saw, which is no longer the last.
    await store.chunks.store("ann", await _chunk_bytes(store, name), fresh_for=0.0)

    async def as_seen(_: str) -> object:
        return seen

    store.chunks.meta = as_seen  # type: ignore[method-assign]
    assert await store.chunks.delete_if_older(name, older_than=0.0) == 0
    assert await JetStreamSceneStore(bus.js, bus.prefix).read(head) == data


async def test_commit_when_chunks_take_longer_than_half_the_grace_fails_and_keeps_head(
    bus: Bus, tmp_path: Path
) -> None:
    store = JetStreamSceneStore(bus.js, bus.prefix, chunk_grace=1e-9)
    with pytest.raises(TimeoutError, match="BLENDMESH_CHUNK_GRACE"):
        await store.commit(
            "s", file_of(tmp_path, "s.blend", scene_bytes(7, 2_000_000)), "h", None, 1
        )
    assert await store.head("s") is None
    assert [r for r in await store.revisions() if r[0] == "s"] == []


async def _chunk_bytes(store: JetStreamSceneStore, name: str) -> dict[str, bytes]:
    space, _, digest = name.rpartition("/")
    found = await store.chunks.read(space, [digest])
    return {digest: found[digest] or b""}


async def test_fetch_when_many_windows_writes_the_file_and_a_lost_chunk_leaves_none(
    bus: Bus, tmp_path: Path
) -> None:
    store = JetStreamSceneStore(bus.js, bus.prefix)
    data = scene_bytes(8, 8 * 1024 * 1024)  # over a hundred chunks: several fetch windows
    head = await store.commit("s", file_of(tmp_path, "s.blend", data), "h", None, 1, "ann")
    dest = tmp_path / "out" / "s.blend"
    await JetStreamSceneStore(bus.js, bus.prefix).fetch(head, dest)
    assert dest.read_bytes() == data
    manifest = await store.manifest(head.object_name)
    assert manifest is not None and len(manifest.chunks) > 64
    last = manifest.chunks[-1][0]  # found missing only in the last window
    await (await bus.js.object_store(store.chunks.bucket)).delete(chunk_name("ann", last))
    again = tmp_path / "again" / "s.blend"
    with pytest.raises(RevisionDamaged, match=f"chunk {last[:16]} is not in the store"):
        await JetStreamSceneStore(bus.js, bus.prefix).fetch(head, again)
    assert list(again.parent.iterdir()) == []  # neither the file nor its partial copy


async def test_commit_when_scene_is_under_a_mebibyte_stores_it_whole(
    bus: Bus, tmp_path: Path
) -> None:
    store = JetStreamSceneStore(bus.js, bus.prefix)
    small = scene_bytes(9, 300_000)
    head = await store.commit("s", file_of(tmp_path, "s.blend", small), "h", None, 1, "ann")
    stored = await read_object(bus.js, f"{bus.prefix}_scenes", head.object_name, 1 << 20)
    assert stored is not None and await chunk_names(store) == set()
    assert packing.unpack(stored, len(small)) == small  # whole, packed (ADR 0035)
    big = scene_bytes(9, 1024 * 1024)  # the threshold itself: chunked
    two = await store.commit("s", file_of(tmp_path, "b.blend", big), "h2", head, 1, "ann")
    assert await chunk_names(store) and await store.read(two) == big
    assert await store.read(head) == small
