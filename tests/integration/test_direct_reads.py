"""Batched direct gets (services/runtime/nats/direct.py), and objects read by them and
written pipelined (services/runtime/nats/objects.py), on a real nats-server."""

from __future__ import annotations

import base64
import json
from types import SimpleNamespace

import pytest
from nats.js.api import KeyValueConfig, ObjectStoreConfig, StorageType, StreamConfig
from nats.js.errors import APIError, DigestMismatchError

from services.runtime.nats import access, direct
from services.runtime.nats.objects import CHUNK, ObjectTooLarge, put_object, read_object
from services.runtime.nats.stores import ensure_stores
from services.runtime.service.host import Bus

STREAM = "DIRECT"


async def _stream(bus: Bus, allow_direct: bool = True) -> None:
    config = StreamConfig(
        name=STREAM, subjects=["d.>"], storage=StorageType.FILE, allow_direct=allow_direct
    )
    await bus.js.add_stream(config)


async def test_read_when_batches_are_small_returns_every_match_in_order(bus: Bus) -> None:
    await _stream(bus)
    for i in range(7):
        await bus.js.publish(f"d.run.a.{i}", f"a{i}".encode())
        await bus.js.publish(f"d.run.b.{i}", f"b{i}".encode())
    got = await direct.read(bus.js, STREAM, "d.run.a.*", limit=100, batch=3)
    assert [s.data for s in got] == [f"a{i}".encode() for i in range(7)]
    assert [s.subject for s in got] == [f"d.run.a.{i}" for i in range(7)]
    assert [s.seq for s in got] == sorted(s.seq for s in got)


async def test_read_from_a_later_sequence_skips_what_came_before(bus: Bus) -> None:
    await _stream(bus)
    seqs = [(await bus.js.publish("d.x", str(i).encode())).seq for i in range(5)]
    got = await direct.read(bus.js, STREAM, "d.x", limit=10, start=seqs[3])
    assert [s.data for s in got] == [b"3", b"4"]


async def test_read_when_nothing_matches_returns_nothing(bus: Bus) -> None:
    await _stream(bus)
    await bus.js.publish("d.other", b"x")
    assert await direct.read(bus.js, STREAM, "d.none.>", limit=10) == []


async def test_read_when_more_than_the_limit_match_says_so(bus: Bus) -> None:
    await _stream(bus)
    for i in range(5):
        await bus.js.publish("d.many", str(i).encode())
    assert len(await direct.read(bus.js, STREAM, "d.many", limit=5, batch=2)) == 5
    with pytest.raises(direct.DirectGetError, match=r"more than 4 messages on d\.many"):
        await direct.read(bus.js, STREAM, "d.many", limit=4, batch=2)


async def test_read_when_the_stream_allows_no_direct_get_fails_clearly(bus: Bus) -> None:
    await _stream(bus, allow_direct=False)
    await bus.js.publish("d.x", b"x")
    with pytest.raises(direct.DirectGetError, match="DIRECT"):
        await direct.read(bus.js, STREAM, "d.x", limit=10, timeout=1.0)


def test_client_of_when_the_context_keeps_no_connection_names_the_pin() -> None:
    with pytest.raises(RuntimeError, match="nats-py"):
        direct.client_of(SimpleNamespace())  # type: ignore[arg-type]


async def test_read_object_when_chunked_returns_the_bytes_put(bus: Bus) -> None:
    store = await bus.js.create_object_store("things")
    data = bytes(range(256)) * 2000  # 512 000 bytes: four chunks of 128 KiB
    await store.put("scene/00000001-abc", data)
    assert await read_object(bus.js, "things", "scene/00000001-abc", len(data)) == data
    await store.put("empty", b"")
    assert await read_object(bus.js, "things", "empty", 10) == b""


async def test_read_object_when_missing_or_deleted_returns_none(bus: Bus) -> None:
    assert await read_object(bus.js, "things", "no store yet", 10) is None
    store = await bus.js.create_object_store("things")
    assert await read_object(bus.js, "things", "never", 10) is None
    await store.put("gone", b"bytes")
    await store.delete("gone")
    assert await read_object(bus.js, "things", "gone", 10) is None


async def test_read_object_when_the_name_is_a_wildcard_reads_no_other_object(
    bus: Bus,
) -> None:
    store = await bus.js.create_object_store("things")
    await store.put("scene/00000001-abc", b"secret")
    for name in ("*", ">", "scene/*", "scene.>", ""):
        assert await read_object(bus.js, "things", name, 100) is None


async def test_read_object_when_larger_than_allowed_refuses_before_reading(bus: Bus) -> None:
    store = await bus.js.create_object_store("things")
    await store.put("big", b"x" * 1000)
    with pytest.raises(ObjectTooLarge, match="holds 1000 bytes, more than the 999"):
        await read_object(bus.js, "things", "big", 999)


async def test_read_object_when_the_chunks_do_not_match_the_digest_refuses(bus: Bus) -> None:
    store = await bus.js.create_object_store("things")
    info = await store.put("real", b"the real bytes")
    # A meta message naming the real chunks with another object's digest.
    forged = info.as_dict() | {"name": "forged", "digest": "SHA-256=" + "A" * 43 + "="}
    meta = base64.urlsafe_b64encode(b"forged").decode()
    await bus.js.publish(f"$O.things.M.{meta}", json.dumps(forged).encode())
    with pytest.raises(DigestMismatchError):
        await read_object(bus.js, "things", "forged", 100)


async def _chunk_messages(bus: Bus) -> int:
    info = await bus.js.stream_info("OBJ_things", subjects_filter="$O.things.C.>")
    return sum((info.state.subjects or {}).values())


async def test_put_object_when_read_by_nats_py_gives_the_same_bytes(bus: Bus) -> None:
    store = await bus.js.create_object_store("things")
    data = bytes(range(256)) * 5000  # 1 280 000 bytes: three chunks
    await put_object(bus.js, "things", "scene/00000002-def", data)
    got = await store.get("scene/00000002-def")
    assert got.data == data
    assert got.info.size == len(data) and got.info.chunks == -(-len(data) // CHUNK)
    assert await read_object(bus.js, "things", "scene/00000002-def", len(data)) == data
    await put_object(bus.js, "things", "empty", b"")
    assert (await store.get("empty")).data == b""


async def test_put_object_when_the_name_exists_replaces_it_and_purges_its_chunks(
    bus: Bus,
) -> None:
    store = await bus.js.create_object_store("things")
    await store.put("same", b"a" * 300_000)  # written by nats-py: three chunks
    await put_object(bus.js, "things", "same", b"b" * 1000)
    assert await read_object(bus.js, "things", "same", 10_000) == b"b" * 1000
    assert await _chunk_messages(bus) == 1  # the old object's chunks are gone


async def test_put_object_when_a_chunk_is_refused_purges_what_it_wrote(bus: Bus) -> None:
    # A store that holds less than the object: a later chunk is refused.
    await bus.js.create_object_store("things", ObjectStoreConfig(max_bytes=CHUNK * 2))
    await put_object(bus.js, "things", "kept", b"k" * 10)
    with pytest.raises(APIError, match="maximum bytes exceeded"):
        await put_object(bus.js, "things", "broken", b"x" * (CHUNK * 3))
    assert await read_object(bus.js, "things", "broken", 10**8) is None
    assert await _chunk_messages(bus) == 1  # only the chunk of "kept" is left


async def test_ensure_stores_when_a_bucket_reads_the_slow_way_allows_direct_gets(
    bus: Bus,
) -> None:
    # A bucket as an older blendmesh made it: keys read through the JetStream API.
    await bus.js.create_key_value(KeyValueConfig(bucket="bmtest_leases", direct=False))
    await ensure_stores(bus.js, "bmtest")
    for name in access.KV_BUCKETS:
        info = await bus.js.stream_info(f"KV_{access.bucket('bmtest', name)}")
        assert info.config.allow_direct, name
    kv = await bus.js.key_value("bmtest_leases")
    await kv.put("scene", b"held")
    assert (await kv.get("scene")).value == b"held"
