"""Staged uploads on a real nats-server: a round trip of a file of several chunks (staged
from bytes or from a file, read whole or streamed to a file a batch at a time), one staged
by nats-py's own object store (128 KiB chunks) still read, and the hostile cases: another
user's blob, a name whose hash is not the bytes' (read, or given to the stage), an upload
larger than the reader takes."""

from __future__ import annotations

import hashlib
import io
import random
from pathlib import Path

import pytest
from nats.js.errors import DigestMismatchError

from contracts.scene_files import blob_id
from services.executor.adapters.uploads import ObjectStoreUploads
from services.runtime.nats.objects import ObjectTooLarge
from services.runtime.service.host import Bus

DATA = b"BLENDER-v500" + random.Random(24).randbytes(3 * 1024 * 1024 + 17)


async def test_stage_then_get_returns_the_same_bytes(bus: Bus) -> None:
    uploads = ObjectStoreUploads(bus.js, bus.prefix)
    blob = await uploads.stage("ana", DATA)
    assert blob == blob_id(DATA)
    assert await uploads.get("ana", blob, max_bytes=len(DATA)) == DATA


async def test_stage_from_a_file_reads_it_from_where_it_stands_a_chunk_at_a_time(
    bus: Bus, tmp_path: Path
) -> None:
    uploads = ObjectStoreUploads(bus.js, bus.prefix)
    path = tmp_path / "scene.blend"
    path.write_bytes(b"skipped" + DATA)
    with path.open("rb") as file:
        file.seek(len(b"skipped"))
        blob = await uploads.stage("ana", file)
    assert blob == blob_id(DATA)
    out = io.BytesIO()
    assert await uploads.fetch("ana", blob, out, max_bytes=len(DATA))
    assert out.getvalue() == DATA
    info = await (await bus.js.object_store(uploads.bucket)).get_info(
        f"ana/{blob.removeprefix('sha256:')}"
    )
    assert info.size == len(DATA) and info.chunks == 7  # 3 MiB and a little in 512 KiB


async def test_stage_when_the_given_digest_is_not_the_files_stores_nothing(bus: Bus) -> None:
    uploads = ObjectStoreUploads(bus.js, bus.prefix)
    await uploads.stage("ana", b"BLENDER-v500 first")  # makes the bucket with its TTL
    stream = f"OBJ_{uploads.bucket}"
    before = (await bus.js.stream_info(stream)).state.messages
    claimed = hashlib.sha256(b"the file as it was hashed").digest()
    with pytest.raises(DigestMismatchError):  # it changed between the hash and the put
        await uploads.stage("ana", io.BytesIO(DATA), claimed)
    assert (await bus.js.stream_info(stream)).state.messages == before  # chunks purged
    assert await uploads.get("ana", f"sha256:{claimed.hex()}") is None


async def test_get_of_an_upload_nats_py_staged_reads_its_small_chunks(bus: Bus) -> None:
    uploads = ObjectStoreUploads(bus.js, bus.prefix)
    await uploads.stage("ana", b"BLENDER-v500 first")  # makes the bucket with its TTL
    blob = blob_id(DATA)
    store = await bus.js.object_store(uploads.bucket)
    await store.put(f"ana/{blob.removeprefix('sha256:')}", DATA)
    assert await uploads.get("ana", blob, max_bytes=len(DATA)) == DATA


async def test_get_when_another_user_staged_it_is_none(bus: Bus) -> None:
    uploads = ObjectStoreUploads(bus.js, bus.prefix)
    blob = await uploads.stage("ana", DATA)
    assert await uploads.get("bob", blob) is None


async def test_get_when_the_bytes_are_not_what_the_name_says_is_none(bus: Bus) -> None:
    uploads = ObjectStoreUploads(bus.js, bus.prefix)
    await uploads.stage("ana", b"BLENDER-v500 first")
    claimed = "sha256:" + hashlib.sha256(b"something else").hexdigest()
    store = await bus.js.object_store(uploads.bucket)
    await store.put(f"ana/{claimed.removeprefix('sha256:')}", DATA)
    assert await uploads.get("ana", claimed) is None


async def test_get_when_larger_than_the_reader_takes_raises_before_reading(bus: Bus) -> None:
    uploads = ObjectStoreUploads(bus.js, bus.prefix)
    blob = await uploads.stage("ana", DATA)
    with pytest.raises(ObjectTooLarge, match=f"more than the {len(DATA) - 1}"):
        await uploads.get("ana", blob, max_bytes=len(DATA) - 1)


async def test_get_when_nothing_was_staged_is_none(bus: Bus) -> None:
    uploads = ObjectStoreUploads(bus.js, bus.prefix)
    assert await uploads.get("ana", blob_id(DATA)) is None
    assert await uploads.get("ana", "sha256:not-hex") is None


async def test_fetch_streams_the_upload_into_the_file_in_batches(bus: Bus) -> None:
    uploads = ObjectStoreUploads(bus.js, bus.prefix)
    big = DATA * 4  # more than one batch of a direct get (8 MiB)
    blob = await uploads.stage("ana", big)
    out = io.BytesIO()
    assert await uploads.fetch("ana", blob, out, max_bytes=len(big))
    assert out.getvalue() == big


async def test_fetch_when_the_bytes_are_not_what_the_name_says_is_false(bus: Bus) -> None:
    uploads = ObjectStoreUploads(bus.js, bus.prefix)
    await uploads.stage("ana", b"BLENDER-v500 first")
    claimed = "sha256:" + hashlib.sha256(b"something else").hexdigest()
    store = await bus.js.object_store(uploads.bucket)
    await store.put(f"ana/{claimed.removeprefix('sha256:')}", DATA)
    out = io.BytesIO()
    assert not await uploads.fetch("ana", claimed, out, max_bytes=len(DATA))
    assert out.getvalue() == b""  # refused on the meta, before a byte was written


async def test_fetch_when_larger_than_the_reader_takes_raises_before_writing(bus: Bus) -> None:
    uploads = ObjectStoreUploads(bus.js, bus.prefix)
    blob = await uploads.stage("ana", DATA)
    out = io.BytesIO()
    over = f"holds {len(DATA)} bytes, more than the {len(DATA) - 1} this reader takes"
    with pytest.raises(ObjectTooLarge, match=over):
        await uploads.fetch("ana", blob, out, max_bytes=len(DATA) - 1)
    assert out.getvalue() == b""


async def test_fetch_when_another_user_or_nothing_staged_is_false(bus: Bus) -> None:
    uploads = ObjectStoreUploads(bus.js, bus.prefix)
    blob = await uploads.stage("ana", DATA)
    assert not await uploads.fetch("bob", blob, io.BytesIO(), max_bytes=len(DATA))
    assert not await uploads.fetch("ana", "sha256:not-hex", io.BytesIO(), max_bytes=len(DATA))
