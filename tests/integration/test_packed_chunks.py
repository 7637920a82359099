"""Chunks stored compressed (ADR 0035) on a real nats-server: a packed revision reads back
byte for byte, raw chunks stored before still read, deduplication is unchanged, and stored
bytes that do not unpack to the chunk, or would inflate past a chunk's bound, are refused
with the chunk's name."""

from __future__ import annotations

import mmap
import random
from pathlib import Path

import pytest
import zstandard

from contracts import revisions
from contracts.revisions import MAX_CHUNK_BYTES, chunk_name
from contracts.scenes import Head
from services.doors.core.revision_reader import open_revision
from services.executor.adapters import packing, scene_store
from services.executor.adapters.scene_store import JetStreamSceneStore
from services.executor.client import SceneFiles
from services.executor.domain.chunking import RevisionDamaged, cut
from services.runtime.nats.objects import put_object, read_stored
from services.runtime.service.host import Bus


def blend_like(seed: int, size: int = 3 * 1024 * 1024) -> bytes:
    """Bytes that compress as an uncompressed .blend does: values from a small vocabulary
    in varied order, so chunks are distinct but several times smaller packed."""
    rng = random.Random(seed)
    words = [rng.randbytes(4) for _ in range(16)]
    return (b"BLENDER-v500" + b"".join(rng.choices(words, k=size // 4)))[:size]


def file_of(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


async def chunk_stream(bus: Bus, store: JetStreamSceneStore) -> tuple[int, int]:
    state = (await bus.js.stream_info(store.chunks.stream)).state
    return state.messages, state.bytes


async def test_commit_when_chunks_are_packed_reads_back_byte_for_byte_and_stores_less(
    bus: Bus, tmp_path: Path
) -> None:
    store = JetStreamSceneStore(bus.js, bus.prefix)
    data = blend_like(1)
    head = await store.commit("s", file_of(tmp_path, "s.blend", data), "h", None, 1, "ann")
    manifest = await store.manifest(head.object_name)
    assert manifest is not None and len(manifest.chunks) >= 20
    for digest in {d for d, _ in manifest.chunks}:
        found = await read_stored(bus.js, store.chunks.bucket, chunk_name("ann", digest), 1 << 20)
        assert found is not None and found[0].headers == packing.PACKED
        assert zstandard.frame_content_size(found[1]) == dict(manifest.chunks)[digest]
    _, stored = await chunk_stream(bus, store)
    assert stored < len(data) / 2  # packed: the stream holds far less than the file
    other = JetStreamSceneStore(bus.js, bus.prefix)  # another executor, nothing remembered
    assert await other.read(head) == data
    await other.fetch(head, tmp_path / "out" / "s.blend")
    assert (tmp_path / "out" / "s.blend").read_bytes() == data


async def test_read_when_chunks_were_stored_raw_before_returns_them_and_a_commit_reuses_them(
    bus: Bus, tmp_path: Path
) -> None:
    store = JetStreamSceneStore(bus.js, bus.prefix)
    await store.commit("warm", file_of(tmp_path, "w.blend", b"BLENDERx"), "w", None, 1)
    await store.chunks.listing()  # creates the chunk store, as the first chunked commit did
    data = blend_like(2)
    pieces = cut(data, "ann")
    for digest, piece in pieces.chunks.items():  # as ADR 0021's store wrote them: raw
        await put_object(bus.js, store.chunks.bucket, chunk_name("ann", digest), bytes(piece))
    name = "old/00000001-0123456789abcdef"
    await put_object(bus.js, store.bucket, name, revisions.encode(pieces.manifest))
    old = Head(scene_id="old", revision=1, scene_hash="0123456789abcdef", object_name=name,
               epoch=0, owner="ann")  # fmt: skip
    assert await JetStreamSceneStore(bus.js, bus.prefix).read(old) == data
    await JetStreamSceneStore(bus.js, bus.prefix).fetch(old, tmp_path / "old.blend")
    assert (tmp_path / "old.blend").read_bytes() == data
    before = await chunk_stream(bus, store)
    edited = data[:1_500_000] + b"moved one object" + data[1_500_016:]
    newer = await store.commit("old", file_of(tmp_path, "n.blend", edited), "n", old, 1, "ann")
    messages, _ = await chunk_stream(bus, store)
    assert 2 <= messages - before[0] <= 4  # the chunk or two around the change, and metas
    assert await JetStreamSceneStore(bus.js, bus.prefix).read(newer) == edited
    assert await JetStreamSceneStore(bus.js, bus.prefix).read(old) == data


async def test_commit_when_the_content_is_stored_already_uploads_no_chunk(
    bus: Bus, tmp_path: Path
) -> None:
    data = blend_like(3, 2 * 1024 * 1024)
    store = JetStreamSceneStore(bus.js, bus.prefix)
    first = await store.commit("a", file_of(tmp_path, "a.blend", data), "h", None, 1, "ann")
    before = await chunk_stream(bus, store)
    # A fresh store knows no manifest: it asks the chunk store, which holds every chunk.
    fresh = JetStreamSceneStore(bus.js, bus.prefix)
    copy = await fresh.commit("b", file_of(tmp_path, "b.blend", data), "h", None, 1, "ann")
    again = await fresh.commit("a", file_of(tmp_path, "a2.blend", data), "h2", first, 1, "ann")
    assert await chunk_stream(bus, store) == before
    assert await fresh.read(copy) == data and await fresh.read(again) == data


async def _victim(bus: Bus, tmp_path: Path) -> tuple[JetStreamSceneStore, Head, str]:
    store = JetStreamSceneStore(bus.js, bus.prefix)
    data = blend_like(4, 2 * 1024 * 1024)
    head = await store.commit("s", file_of(tmp_path, "s.blend", data), "h", None, 1, "ann")
    manifest = await store.manifest(head.object_name)
    assert manifest is not None
    return store, head, manifest.chunks[len(manifest.chunks) // 2][0]


async def _refused(bus: Bus, head: Head, tmp_path: Path, message: str) -> None:
    """Both readers refuse ``head``: the whole read, and the fetch, which leaves no file."""
    with pytest.raises(RevisionDamaged, match=f"revision 1 of scene s is damaged: {message}"):
        await JetStreamSceneStore(bus.js, bus.prefix).read(head)
    dest = tmp_path / "fetched" / "s.blend"
    with pytest.raises(RevisionDamaged, match=message):
        await JetStreamSceneStore(bus.js, bus.prefix).fetch(head, dest)
    assert list(dest.parent.iterdir()) == []


@pytest.mark.parametrize(
    ("stored", "why"),
    [
        (b"\x28\xb5\x2f\xfd but not a frame", "does not decompress"),
        (b"garbage", "is not a zstd frame"),
        (packing.pack(b"not the chunk's bytes")[0], "does not hash to its name"),
    ],
)
async def test_read_when_a_packed_chunk_is_corrupt_names_the_chunk(
    bus: Bus, tmp_path: Path, stored: bytes, why: str
) -> None:
    store, head, victim = await _victim(bus, tmp_path)
    name = chunk_name("ann", victim)
    await put_object(bus.js, store.chunks.bucket, name, stored, headers=packing.PACKED)
    await _refused(bus, head, tmp_path, f"its chunk {victim[:16]} {why}")


async def test_read_when_stored_bytes_do_not_match_their_meta_names_the_chunk(
    bus: Bus, tmp_path: Path
) -> None:
    store, head, victim = await _victim(bus, tmp_path)
    name = chunk_name("ann", victim)
    found = await read_stored(bus.js, store.chunks.bucket, name, 1 << 20)
    assert found is not None
    info = found[0]
    # The chunk's message swapped for other bytes under the same meta: its SHA-256 fails.
    await bus.js.purge_stream(
        store.chunks.stream, subject=f"$O.{store.chunks.bucket}.C.{info.nuid}"
    )
    await bus.js.publish(f"$O.{store.chunks.bucket}.C.{info.nuid}", b"x" * (info.size or 1),
                         stream=store.chunks.stream)  # fmt: skip
    await _refused(bus, head, tmp_path, f"its chunk {victim[:16]} does not hash to its name")


async def test_read_when_a_packed_chunk_would_inflate_past_a_chunk_refuses_it(
    bus: Bus, tmp_path: Path
) -> None:
    store, head, victim = await _victim(bus, tmp_path)
    bomb = zstandard.ZstdCompressor(level=19).compress(bytes(64 * 1024 * 1024))
    assert len(bomb) < 4096
    name = chunk_name("ann", victim)
    await put_object(bus.js, store.chunks.bucket, name, bomb, headers=packing.PACKED)
    over = f"would inflate to {64 * 1024 * 1024} bytes, over the {MAX_CHUNK_BYTES}"
    await _refused(bus, head, tmp_path, f"its chunk {victim[:16]} {over}")


async def test_read_when_a_chunk_names_an_unknown_encoding_refuses_it(
    bus: Bus, tmp_path: Path
) -> None:
    store, head, victim = await _victim(bus, tmp_path)
    found = await JetStreamSceneStore(bus.js, bus.prefix).chunks.read("ann", [victim])
    raw = found[victim]
    assert raw is not None
    name = chunk_name("ann", victim)
    await put_object(bus.js, store.chunks.bucket, name, raw, headers={packing.HEADER: ["br"]})
    await _refused(bus, head, tmp_path, f"its chunk {victim[:16]} is stored in an encoding")


async def test_commit_when_scene_is_small_stores_it_whole_and_packed(
    bus: Bus, tmp_path: Path
) -> None:
    store = JetStreamSceneStore(bus.js, bus.prefix)
    small = blend_like(5, 400_000)
    head = await store.commit("s", file_of(tmp_path, "s.blend", small), "h", None, 1, "ann")
    found = await read_stored(bus.js, store.bucket, head.object_name, 1 << 20)
    assert found is not None and found[0].headers == packing.PACKED
    assert len(found[1]) < len(small) / 2 and packing.unpack(found[1], len(small)) == small
    assert await store.manifest(head.object_name) is None  # whole, not a manifest
    assert await JetStreamSceneStore(bus.js, bus.prefix).read(head) == small
    await store.fetch(head, tmp_path / "out" / "s.blend")
    assert (tmp_path / "out" / "s.blend").read_bytes() == small
    bomb = zstandard.ZstdCompressor(level=19).compress(bytes(8 * 1024 * 1024))
    await put_object(bus.js, store.bucket, head.object_name, bomb[:-2], headers=packing.PACKED)
    with pytest.raises(RevisionDamaged, match="its stored file does not decompress"):
        await store.read(head)
    await put_object(
        bus.js, store.bucket, head.object_name, small, headers={"Content-Encoding": ["x"]}
    )
    with pytest.raises(RevisionDamaged, match="stored file is stored in an encoding"):
        await store.fetch(head, tmp_path / "out" / "again.blend")


async def test_result_image_when_kept_is_packed_and_an_old_raw_one_still_fetches(
    bus: Bus, tmp_path: Path
) -> None:
    store = JetStreamSceneStore(bus.js, bus.prefix)
    image = blend_like(6, 1_500_000)
    await store.put_result("_results/new", file_of(tmp_path, "r.blend", image))
    found = await read_stored(bus.js, store.bucket, "_results/new", 1 << 21)
    assert found is not None and found[0].headers == packing.PACKED
    assert len(found[1]) < len(image) / 2
    assert await store.fetch_result("_results/new", tmp_path / "got" / "new.blend")
    assert (tmp_path / "got" / "new.blend").read_bytes() == image
    await put_object(bus.js, store.bucket, "_results/old", image)  # before ADR 0035: raw
    assert await store.fetch_result("_results/old", tmp_path / "got" / "old.blend")
    assert (tmp_path / "got" / "old.blend").read_bytes() == image
    await put_object(bus.js, store.bucket, "_results/bad", b"junk", headers=packing.PACKED)
    with pytest.raises(RevisionDamaged, match="result image _results/bad is damaged"):
        await store.fetch_result("_results/bad", tmp_path / "got" / "bad.blend")
    assert not (tmp_path / "got" / "bad.blend").exists()


async def test_inspection_artifact_when_kept_is_packed_and_an_old_raw_one_still_reads(
    bus: Bus, tmp_path: Path
) -> None:
    store = JetStreamSceneStore(bus.js, bus.prefix)
    head = await store.commit("s", file_of(tmp_path, "s.blend", blend_like(7, 1000)), "h", None, 1)
    document = b'{"objects":[' + b",".join(b'{"name":"Prop_%04d"}' % i for i in range(2000)) + b"]}"
    name = await store.put_inspection(head, document)
    found = await read_stored(bus.js, store.bucket, name, 1 << 20)
    assert found is not None and found[0].headers == packing.PACKED
    assert len(found[1]) < len(document) / 4
    assert await JetStreamSceneStore(bus.js, bus.prefix).read_inspection(name) == document
    await put_object(bus.js, store.bucket, name, document)  # as stored before ADR 0035
    assert await store.read_inspection(name) == document
    bomb = zstandard.ZstdCompressor(level=19).compress(bytes(65 * 1024 * 1024))
    await put_object(bus.js, store.bucket, name, bomb, headers=packing.PACKED)
    with pytest.raises(RevisionDamaged, match=f"inspection artifact {name} is damaged: .* over"):
        await store.read_inspection(name)


async def test_download_reader_when_chunks_are_packed_sends_the_raw_file_and_refuses_a_bad_one(
    bus: Bus, tmp_path: Path
) -> None:
    store, head, victim = await _victim(bus, tmp_path)
    files = SceneFiles(bus.js, bus.prefix)  # the gateway's reader of revisions
    reader = await open_revision(files, head)
    sent = b"".join([piece async for piece in reader.pieces()])
    assert sent == await store.read(head) and reader.size == len(sent)
    name = chunk_name("ann", victim)
    await put_object(bus.js, store.chunks.bucket, name, b"junk", headers=packing.PACKED)
    with pytest.raises(RevisionDamaged, match=f"stored chunk {victim[:16]} is not a zstd frame"):
        reader = await open_revision(files, head)
        _ = [piece async for piece in reader.pieces()]


async def test_commit_when_done_or_refused_leaves_the_saved_file_unmapped(
    bus: Bus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    maps: list[mmap.mmap] = []
    original = scene_store._map

    def mapped(path: Path) -> bytes | mmap.mmap:
        data = original(path)
        assert isinstance(data, mmap.mmap)
        maps.append(data)
        return data

    monkeypatch.setattr(scene_store, "_map", mapped)
    store = JetStreamSceneStore(bus.js, bus.prefix)
    big, small = blend_like(8, 2 * 1024 * 1024), blend_like(9, 500_000)
    one = await store.commit("s", file_of(tmp_path, "1.blend", big), "h1", None, 1, "ann")
    two = await store.commit("s", file_of(tmp_path, "2.blend", small), "h2", one, 1, "ann")
    slow = JetStreamSceneStore(bus.js, bus.prefix, chunk_grace=1e-9)
    with pytest.raises(TimeoutError):
        await slow.commit("t", file_of(tmp_path, "3.blend", blend_like(10)), "h3", None, 1)
    assert len(maps) == 3 and all(m.closed for m in maps)
    assert await store.read(one) == big and await store.read(two) == small
