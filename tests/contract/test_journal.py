"""The executor's Journal port: MemoryJournal and KvJournal held to the same behaviour."""

from __future__ import annotations

import pytest

from contracts.receipts import Receipt
from services.executor.adapters.kv_journal import KvJournal
from services.executor.domain.journal import JournalEntry, args_digest
from services.executor.domain.ports import Journal
from services.executor.memory import MemoryJournal
from services.runtime.service.host import Bus


def entry(operation_id: str, after: str = "h1") -> JournalEntry:
    receipt = Receipt(
        operation_id=operation_id,
        tool_name="object.create",
        safety_level="safe_write",
        status="succeeded",
        scene_hash_before="h0",
        scene_hash_after=after,
    )
    return JournalEntry(
        request_id="req-1",
        operation_id=operation_id,
        args_digest=args_digest({"primitive": "cube"}),
        run_id="run-1",
        receipt=receipt,
    )


class JournalContract:
    """Subclass with a ``journal`` fixture."""

    async def test_get_when_key_missing_returns_none(self, journal: Journal) -> None:
        assert await journal.get("missing") is None

    async def test_put_when_read_back_returns_equal_entry(self, journal: Journal) -> None:
        await journal.put("k1", entry("op01"))
        assert await journal.get("k1") == entry("op01")
        assert await journal.get("k2") is None

    async def test_put_when_key_exists_replaces_entry(self, journal: Journal) -> None:
        await journal.put("k1", entry("op01", after="h1"))
        await journal.put("k1", entry("op01", after="h2"))
        assert await journal.get("k1") == entry("op01", after="h2")

    async def test_delete_when_key_exists_forgets_it(self, journal: Journal) -> None:
        await journal.put("k1", entry("op01"))
        await journal.put("k2", entry("op02"))
        await journal.delete("k1")
        assert await journal.get("k1") is None
        assert await journal.get("k2") == entry("op02")

    async def test_delete_when_key_missing_does_nothing(self, journal: Journal) -> None:
        await journal.delete("missing")
        assert await journal.get("missing") is None

    async def test_put_when_key_was_deleted_stores_it_again(self, journal: Journal) -> None:
        await journal.put("k1", entry("op01"))
        await journal.delete("k1")
        await journal.put("k1", entry("op01", after="h3"))
        assert await journal.get("k1") == entry("op01", after="h3")

    async def test_put_many_when_read_back_returns_every_entry(self, journal: Journal) -> None:
        await journal.put("k0", entry("op00", after="h0"))
        await journal.put_many([(f"k{i}", entry(f"op{i:02d}")) for i in range(12)])
        for i in range(12):
            assert await journal.get(f"k{i}") == entry(f"op{i:02d}")


class TestMemoryJournal(JournalContract):
    @pytest.fixture
    def journal(self) -> Journal:
        return MemoryJournal()


@pytest.mark.integration
class TestKvJournal(JournalContract):
    @pytest.fixture
    def journal(self, executor_bus: Bus) -> Journal:
        return KvJournal(executor_bus.js, executor_bus.prefix)
