"""live_keys lists a bucket's live keys on a real nats-server, deleted and purged ones left out."""

from __future__ import annotations

from services.runtime.nats.kv_keys import live_keys
from services.runtime.nats.streams import ensure_kv
from services.runtime.service.host import Bus


async def test_live_keys_when_bucket_empty_is_empty(bus: Bus) -> None:
    await ensure_kv(bus.js, bus.prefix, "keys_empty")
    assert await live_keys(bus.js, bus.prefix, "keys_empty") == []


async def test_live_keys_when_keys_deleted_or_purged_lists_the_rest(bus: Bus) -> None:
    kv = await ensure_kv(bus.js, bus.prefix, "keys_some")
    for key in ("a", "b", "c", "d"):
        await kv.put(key, b"x")
    await kv.put("a", b"again")  # a later value of the same key is still one key
    await kv.delete("b")
    await kv.purge("c")
    assert sorted(await live_keys(bus.js, bus.prefix, "keys_some")) == ["a", "d"]


async def test_live_keys_when_many_keys_lists_each_once(bus: Bus) -> None:
    kv = await ensure_kv(bus.js, bus.prefix, "keys_many")
    names = [f"k{n:03d}" for n in range(300)]
    for name in names:
        await kv.put(name, b"x")
    for _ in range(5):  # the race nats-py's keys() loses shows on repeated listings
        assert sorted(await live_keys(bus.js, bus.prefix, "keys_many")) == names
