"""TypedKv on a real nats-server: typed values with revisions, compare-and-set, keys checked
before they are sent, stored bytes that do not decode reported with their bucket and key."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from contracts.errors import BlendmeshError
from services.runtime.nats.kv import (
    MAX_KEY_LENGTH,
    Entry,
    KvConflict,
    KvKeyExists,
    KvKeyInvalid,
    KvTooManyKeys,
    KvValueUnreadable,
    TypedKv,
)
from services.runtime.nats.streams import ensure_kv
from services.runtime.service.host import Bus


class Point(msgspec.Struct, frozen=True, kw_only=True):
    x: int
    label: str = ""


def table(bus: Bus, name: str = "points") -> TypedKv[Point]:
    return TypedKv(bus.js, bus.prefix, name, Point)


async def test_put_when_read_back_returns_value_and_its_revision(bus: Bus) -> None:
    points = table(bus)
    first = await points.put("a", Point(x=1))
    second = await points.put("a", Point(x=2, label="moved"))
    assert second > first
    assert await points.get("a") == Entry(Point(x=2, label="moved"), second)
    assert await points.revision("a") == second


async def test_get_when_key_never_written_returns_none(bus: Bus) -> None:
    points = table(bus)
    assert await points.get("nobody") is None
    assert await points.revision("nobody") is None


async def test_get_when_key_deleted_or_purged_returns_none(bus: Bus) -> None:
    points = table(bus)
    await points.put("deleted", Point(x=1))
    await points.put("purged", Point(x=2))
    await points.put("kept", Point(x=3))
    await points.delete("deleted")
    await points.purge("purged")
    assert await points.get("deleted") is None
    assert await points.get("purged") is None
    assert await points.revision("deleted") is None
    assert (await points.get("kept")) is not None


async def test_delete_when_key_missing_does_nothing(bus: Bus) -> None:
    points = table(bus)
    await points.delete("never")
    assert await points.get("never") is None


async def test_get_when_stored_value_empty_returns_none(bus: Bus) -> None:
    kv = await ensure_kv(bus.js, bus.prefix, "points")
    await kv.put("empty", b"")
    assert await table(bus).get("empty") is None
    assert await table(bus).revision("empty") is None


async def test_update_when_at_the_given_revision_writes(bus: Bus) -> None:
    points = table(bus)
    revision = await points.put("a", Point(x=1))
    newer = await points.update("a", Point(x=2), revision)
    assert await points.get("a") == Entry(Point(x=2), newer)


async def test_update_when_written_meanwhile_raises_conflict_and_keeps_newer(bus: Bus) -> None:
    points = table(bus)
    seen = await points.put("a", Point(x=1))
    await points.put("a", Point(x=5, label="theirs"))
    with pytest.raises(KvConflict) as raised:
        await points.update("a", Point(x=2, label="mine"), seen)
    assert isinstance(raised.value, BlendmeshError)
    assert (raised.value.bucket, raised.value.key) == ("bmtest_points", "a")
    assert "bmtest_points" in str(raised.value) and f"revision {seen}" in str(raised.value)
    found = await points.get("a")
    assert found is not None and found.value == Point(x=5, label="theirs")


async def test_update_when_deleted_meanwhile_raises_conflict(bus: Bus) -> None:
    points = table(bus)
    seen = await points.put("a", Point(x=1))
    await points.delete("a")
    with pytest.raises(KvConflict):
        await points.update("a", Point(x=2), seen)
    assert await points.get("a") is None


async def test_create_when_key_free_writes_it(bus: Bus) -> None:
    points = table(bus)
    revision = await points.create("a", Point(x=1))
    assert await points.get("a") == Entry(Point(x=1), revision)


async def test_create_when_key_exists_raises_key_exists_and_keeps_value(bus: Bus) -> None:
    points = table(bus)
    await points.put("a", Point(x=1))
    with pytest.raises(KvKeyExists) as raised:
        await points.create("a", Point(x=2))
    assert isinstance(raised.value, KvConflict)  # callers may catch any lost race at once
    assert "'a'" in str(raised.value) and "bmtest_points" in str(raised.value)
    found = await points.get("a")
    assert found is not None and found.value == Point(x=1)


async def test_create_when_key_was_deleted_writes_it_again(bus: Bus) -> None:
    points = table(bus)
    await points.put("a", Point(x=1))
    await points.delete("a")
    revision = await points.create("a", Point(x=3))
    assert await points.get("a") == Entry(Point(x=3), revision)


@pytest.mark.parametrize(
    "stored",
    [b"not json at all", b'{"x": "one"}', b'{"label": "no x"}', b"[1, 2]"],
)
async def test_get_when_stored_value_not_of_the_type_names_bucket_and_key(
    bus: Bus, stored: bytes
) -> None:
    kv = await ensure_kv(bus.js, bus.prefix, "points")
    revision = await kv.put("broken.one", stored)
    with pytest.raises(KvValueUnreadable) as raised:
        await table(bus).get("broken.one")
    error = raised.value
    assert (error.bucket, error.key) == ("bmtest_points", "broken.one")
    message = str(error)
    assert "'broken.one'" in message and "bmtest_points" in message and "Point" in message
    assert f"revision {revision}" in message
    # Callers that caught msgspec's own error before still catch this one.
    assert isinstance(error, msgspec.DecodeError) and isinstance(error, BlendmeshError)
    # The key still answers without decoding, so it can be found and repaired.
    assert await table(bus).revision("broken.one") == revision


BAD_KEYS = [
    "",
    "has space",
    "star*",
    "tail>",
    ">",
    ".leading",
    "trailing.",
    "double..dot",
    "tab\tkey",
    "é",
    "x" * (MAX_KEY_LENGTH + 1),
]


@pytest.mark.parametrize("key", BAD_KEYS)
async def test_every_operation_when_key_invalid_refuses_it_naming_the_bucket(
    bus: Bus, key: str
) -> None:
    points = table(bus)
    attempts = [
        points.get(key),
        points.revision(key),
        points.put(key, Point(x=1)),
        points.create(key, Point(x=1)),
        points.update(key, Point(x=1), 1),
        points.delete(key),
        points.purge(key),
    ]
    for attempt in attempts:
        with pytest.raises(KvKeyInvalid, match="bmtest_points") as raised:
            await attempt
        assert isinstance(raised.value, ValueError)
    assert await points.keys() == []  # nothing reached the bucket


async def test_put_when_key_uses_every_allowed_character_or_longest_length_reads_back(
    bus: Bus,
) -> None:
    points = table(bus)
    odd, longest = "Scene-1/v=2_a.b.C9", "k" * MAX_KEY_LENGTH
    await points.put(odd, Point(x=1))
    await points.put(longest, Point(x=2))
    found = await points.get(longest)
    assert found is not None and found.value == Point(x=2)
    assert await points.keys() == sorted([odd, longest])


async def test_keys_when_many_keys_some_removed_lists_the_live_ones_sorted(bus: Bus) -> None:
    points = table(bus)
    names = [f"k{n:03d}" for n in range(400)]
    for n, name in enumerate(names):
        await points.put(name, Point(x=n))
    await points.delete("k007")
    await points.purge("k100")
    live = [n for n in names if n not in ("k007", "k100")]
    for _ in range(3):  # nats-py's own listing loses keys on repeated calls under load
        assert await points.keys() == live


async def test_keys_when_starts_with_given_lists_only_those(bus: Bus) -> None:
    points = table(bus)
    for key in ("s1.a", "s1.b", "s10.a", "s2.a"):
        await points.put(key, Point(x=1))
    assert await points.keys("s1.") == ["s1.a", "s1.b"]
    assert await points.keys("none.") == []


async def test_keys_when_bucket_never_written_lists_none(bus: Bus) -> None:
    assert await table(bus, "untouched").keys() == []


async def test_keys_when_more_than_limit_raises_too_many_with_count(bus: Bus) -> None:
    points = table(bus)
    for n in range(6):
        await points.put(f"k{n}", Point(x=n))
    assert len(await points.keys(limit=6)) == 6
    with pytest.raises(KvTooManyKeys, match="6 keys in KV bucket bmtest_points") as raised:
        await points.keys(limit=5)
    assert raised.value.count == 6
    with pytest.raises(KvTooManyKeys, match="starting 'k'"):
        await points.keys("k", limit=5)


async def test_get_when_still_at_known_revision_returns_known_without_decoding(bus: Bus) -> None:
    points = table(bus)
    await points.put("a", Point(x=1))
    known = await points.get("a")
    assert known is not None
    assert await points.get("a", known=known) is known
    await points.put("a", Point(x=2))
    newer = await points.get("a", known=known)
    assert newer is not known and newer is not None and newer.value == Point(x=2)


async def test_put_when_value_is_plain_json_object_round_trips(bus: Bus) -> None:
    docs: TypedKv[dict[str, Any]] = TypedKv(bus.js, bus.prefix, "docs", dict[str, Any])
    await docs.put("d", {"b": [1, 2], "a": {"nested": None}})
    found = await docs.get("d")
    assert found is not None and found.value == {"b": [1, 2], "a": {"nested": None}}
    kv = await ensure_kv(bus.js, bus.prefix, "docs")
    await kv.put("list", b"[1]")
    with pytest.raises(KvValueUnreadable, match="bmtest_docs"):
        await docs.get("list")


async def test_put_when_order_sorted_stores_keys_sorted(bus: Bus) -> None:
    plain = TypedKv(bus.js, bus.prefix, "docs", dict[str, int])
    ordered = TypedKv(bus.js, bus.prefix, "docs", dict[str, int], order="sorted")
    await plain.put("plain", {"b": 1, "a": 2})
    await ordered.put("sorted", {"b": 1, "a": 2})
    kv = await ensure_kv(bus.js, bus.prefix, "docs")
    assert (await kv.get("plain")).value == b'{"b":1,"a":2}'
    assert (await kv.get("sorted")).value == b'{"a":2,"b":1}'
