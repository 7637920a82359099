"""The KV adapters on TypedKv keep their buckets' bytes: what they write is what they wrote
before (so buckets an older blendmesh filled still read, and older readers read new
entries), and a value that no longer decodes is reported with its bucket and key."""

from __future__ import annotations

import msgspec
import pytest

from contracts import nodes
from contracts.allowlist import AllowlistEntry, entry_id
from contracts.nodes import NodeCatalog, NodeSpec, SocketSpec
from contracts.receipts import Receipt
from contracts.scenes import SceneSummary
from contracts.tools import ToolCatalog, ToolSpec
from services.executor.adapters import tags as tags_module
from services.executor.adapters.catalog import KvCatalog, KvNodeCatalog
from services.executor.adapters.kv_journal import KvJournal
from services.executor.adapters.scene_summaries import KvSceneSummaries
from services.executor.adapters.tags import KvSceneTags, RevisionTag, TooManyTags
from services.executor.domain.journal import JournalEntry, args_digest
from services.policy import allowlist as allowlist_module
from services.policy.allowlist import KvAllowlist
from services.runtime.nats.kv import KvKeyInvalid, KvTooManyKeys, KvValueUnreadable
from services.runtime.nats.streams import ensure_kv
from services.runtime.service.host import Bus


def journal_entry(after: str = "h1") -> JournalEntry:
    receipt = Receipt(
        operation_id="op01",
        tool_name="object.create",
        safety_level="safe_write",
        status="succeeded",
        scene_hash_before="h0",
        scene_hash_after=after,
    )
    return JournalEntry(
        request_id="req-1",
        operation_id="op01",
        args_digest=args_digest({"primitive": "cube"}),
        run_id="run-1",
        receipt=receipt,
    )


def allowed(user: str, scene: str = "s1", at: float = 1.5) -> AllowlistEntry:
    return AllowlistEntry(
        entry_id=entry_id(user, "object.delete", scene),
        user=user,
        tool="object.delete",
        scene_id=scene,
        created_at=at,
        created_by=user,
        run_id="run-1",
    )


def tool_catalog(version: str) -> ToolCatalog:
    tool = ToolSpec(
        name="object.create",
        description="Add an object",
        input_schema={"type": "object", "properties": {"b": {}, "a": {}}},
        safety_level="safe_write",
    )
    return ToolCatalog(version=version, blender_version="4.2.0", tools=[tool])


def node_catalog(version: str) -> NodeCatalog:
    level = SocketSpec(name="Level", identifier="Level", bl_idname="NodeSocketInt", type="INT")
    spec = NodeSpec(bl_idname="GeometryNodeSubdivisionSurface", label="Subdivision Surface",
                    inputs=[level])  # fmt: skip
    return NodeCatalog(blender_version=version, nodes={spec.bl_idname: spec})


async def stored(bus: Bus, bucket: str, key: str) -> bytes:
    return (await (await ensure_kv(bus.js, bus.prefix, bucket)).get(key)).value or b""


async def store(bus: Bus, bucket: str, key: str, value: bytes) -> None:
    await (await ensure_kv(bus.js, bus.prefix, bucket)).put(key, value)


async def test_journal_when_written_stores_the_bytes_it_always_did(bus: Bus) -> None:
    await KvJournal(bus.js, bus.prefix).put("k1", journal_entry())
    assert await stored(bus, "journal", "k1") == msgspec.json.encode(journal_entry())
    await store(bus, "journal", "k2", msgspec.json.encode(journal_entry("h2")))
    assert await KvJournal(bus.js, bus.prefix).get("k2") == journal_entry("h2")


async def test_summaries_when_written_stores_the_bytes_they_always_did(bus: Bus) -> None:
    summary = SceneSummary(scene_id="s1", scene_hash="h", objects=[], materials=[])
    await KvSceneSummaries(bus.js, bus.prefix).put(summary)
    assert await stored(bus, "scene_summaries", "s1") == msgspec.json.encode(summary)
    older = SceneSummary(scene_id="s2", scene_hash="h2", objects=[], materials=[])
    await store(bus, "scene_summaries", "s2", msgspec.json.encode(older))
    assert await KvSceneSummaries(bus.js, bus.prefix).get("s2") == older


async def test_allowlist_when_written_stores_the_bytes_it_always_did(bus: Bus) -> None:
    await KvAllowlist(bus.js, bus.prefix).add(allowed("ana"))
    key = allowed("ana").entry_id
    assert await stored(bus, "allowlist", key) == msgspec.json.encode(allowed("ana"))
    bens = allowed("ben", at=2.5)
    await store(bus, "allowlist", bens.entry_id, msgspec.json.encode(bens))
    assert await KvAllowlist(bus.js, bus.prefix).entries() == [allowed("ana"), bens]


async def test_tags_when_written_store_the_bytes_they_always_did(bus: Bus) -> None:
    await KvSceneTags(bus.js, bus.prefix).tag("s1", 3, "keep", "ana")
    expected = msgspec.json.encode(RevisionTag(revision=3, by="ana"))
    assert await stored(bus, "scene_tags", "s1.keep") == expected
    await store(bus, "scene_tags", "s2.old", msgspec.json.encode(RevisionTag(revision=1, by="b")))
    assert await KvSceneTags(bus.js, bus.prefix).kept() == {"s1": {3}, "s2": {1}}


async def test_catalogs_when_published_store_the_bytes_they_always_did(bus: Bus) -> None:
    await KvCatalog(bus.js, bus.prefix).publish(tool_catalog("v1"))
    await KvNodeCatalog(bus.js, bus.prefix).publish(node_catalog("5.0.1"))
    assert await stored(bus, "catalog", "tools") == msgspec.json.encode(tool_catalog("v1"))
    assert await stored(bus, "catalog", "nodes") == nodes.encode(node_catalog("5.0.1"))
    await store(bus, "catalog", "nodes", nodes.encode(node_catalog("5.0.2")))
    assert await KvNodeCatalog(bus.js, bus.prefix).get() == node_catalog("5.0.2")


async def test_catalog_when_same_revision_read_again_is_not_decoded_again(bus: Bus) -> None:
    writer, reader = KvCatalog(bus.js, bus.prefix), KvCatalog(bus.js, bus.prefix)
    assert await reader.get() is None
    await writer.publish(tool_catalog("v1"))
    first = await reader.get()
    assert first == tool_catalog("v1")
    assert await reader.get() is first
    await writer.publish(tool_catalog("v2"))
    assert await reader.get() == tool_catalog("v2")


async def test_summaries_when_stored_value_unreadable_name_bucket_and_key(bus: Bus) -> None:
    await store(bus, "scene_summaries", "s1", b'{"scene_id": 7}')
    with pytest.raises(KvValueUnreadable, match="'s1' in KV bucket bmtest_scene_summaries"):
        await KvSceneSummaries(bus.js, bus.prefix).get("s1")


async def test_journal_when_key_invalid_refuses_it_before_sending(bus: Bus) -> None:
    with pytest.raises(KvKeyInvalid, match="bmtest_journal"):
        await KvJournal(bus.js, bus.prefix).put("op key", journal_entry())


async def test_untag_when_tag_value_unreadable_still_removes_it(bus: Bus) -> None:
    await store(bus, "scene_tags", "s1.bad", b"garbage")
    tags = KvSceneTags(bus.js, bus.prefix)
    assert await tags.untag("s1", "bad") is True
    assert await tags.untag("s1", "bad") is False
    assert await tags.of("s1") == {}


async def test_tags_of_when_other_scenes_tagged_reads_only_this_scenes(bus: Bus) -> None:
    tags = KvSceneTags(bus.js, bus.prefix)
    await tags.tag("s1", 2, "keep", "ana")
    await tags.tag("s1", 4, "final", "ana")
    await tags.tag("s10", 9, "keep", "ben")
    # Another scene's unreadable tag does not stop this scene's from being listed.
    await store(bus, "scene_tags", "s2.bad", b"garbage")
    assert await tags.of("s1") == {"keep": 2, "final": 4}
    assert await tags.of("s10") == {"keep": 9}
    with pytest.raises(KvValueUnreadable, match=r"'s2\.bad' in KV bucket bmtest_scene_tags"):
        await tags.kept()


async def test_tags_when_more_than_collector_reads_raise_too_many(
    bus: Bus, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tags_module, "MAX_TAGS", 2)
    tags = KvSceneTags(bus.js, bus.prefix)
    for name in ("a", "b", "c"):
        await tags.tag("s1", 1, name, "ana")
    with pytest.raises(TooManyTags, match="3 tags, more than the 2 retention reads"):
        await tags.kept()


async def test_allowlist_when_more_entries_than_read_at_once_says_so(
    bus: Bus, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(allowlist_module, "MAX_ENTRIES", 1)
    allowlist = KvAllowlist(bus.js, bus.prefix)
    await allowlist.add(allowed("ana"))
    assert await allowlist.entries() == [allowed("ana")]
    await allowlist.add(allowed("ben"))
    with pytest.raises(KvTooManyKeys, match="2 keys in KV bucket bmtest_allowlist"):
        await allowlist.entries()
