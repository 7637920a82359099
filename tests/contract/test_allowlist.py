"""The policy service's Allowlist port: MemoryAllowlist and KvAllowlist held to the same
behaviour. One entry per (user, tool, scene); a user may revoke only their own."""

from __future__ import annotations

import pytest

from contracts.allowlist import AllowlistEntry, entry_id
from services.policy.allowlist import KvAllowlist
from services.policy.memory import MemoryAllowlist
from services.policy.ports import Allowlist
from services.runtime.service.host import Bus


def entry(
    user: str, tool: str = "object.delete", scene: str = "s1", at: float = 1.0
) -> AllowlistEntry:
    return AllowlistEntry(
        entry_id=entry_id(user, tool, scene),
        user=user,
        tool=tool,
        scene_id=scene,
        created_at=at,
        created_by=user,
        run_id=f"run-{user}-{at}",
    )


class AllowlistContract:
    """Subclass with an ``allowlist`` fixture."""

    async def test_find_when_nothing_allowed_returns_none(self, allowlist: Allowlist) -> None:
        assert await allowlist.find("ana", "object.delete", "s1") is None
        assert await allowlist.entries() == []
        assert await allowlist.entries("ana") == []

    async def test_add_when_found_by_user_tool_and_scene_returns_it(
        self, allowlist: Allowlist
    ) -> None:
        await allowlist.add(entry("ana"))
        assert await allowlist.find("ana", "object.delete", "s1") == entry("ana")
        assert await allowlist.find("ben", "object.delete", "s1") is None
        assert await allowlist.find("ana", "object.delete", "s2") is None
        assert await allowlist.find("ana", "material.delete", "s1") is None

    async def test_add_when_same_approval_again_keeps_one_entry(self, allowlist: Allowlist) -> None:
        await allowlist.add(entry("ana", at=1.0))
        await allowlist.add(entry("ana", at=2.0))
        assert await allowlist.entries("ana") == [entry("ana", at=2.0)]

    async def test_entries_when_user_given_lists_only_theirs_oldest_first(
        self, allowlist: Allowlist
    ) -> None:
        newer, older = entry("ana", scene="s2", at=5.0), entry("ana", scene="s1", at=3.0)
        bens = entry("ben", at=4.0)
        for e in (newer, bens, older):
            await allowlist.add(e)
        assert await allowlist.entries("ana") == [older, newer]
        assert await allowlist.entries("ben") == [bens]
        assert await allowlist.entries("cy") == []
        assert await allowlist.entries() == [older, bens, newer]

    async def test_revoke_when_own_entry_removes_it(self, allowlist: Allowlist) -> None:
        await allowlist.add(entry("ana"))
        await allowlist.add(entry("ana", scene="s2"))
        assert await allowlist.revoke(entry("ana").entry_id, "ana") is True
        assert await allowlist.find("ana", "object.delete", "s1") is None
        assert await allowlist.entries("ana") == [entry("ana", scene="s2")]

    async def test_revoke_when_another_users_entry_returns_false_and_keeps_it(
        self, allowlist: Allowlist
    ) -> None:
        await allowlist.add(entry("ana"))
        assert await allowlist.revoke(entry("ana").entry_id, "ben") is False
        assert await allowlist.find("ana", "object.delete", "s1") == entry("ana")

    async def test_revoke_when_no_such_entry_returns_false(self, allowlist: Allowlist) -> None:
        assert await allowlist.revoke("0123456789abcdef", "ana") is False
        assert await allowlist.revoke("0123456789abcdef") is False

    async def test_revoke_when_already_revoked_returns_false(self, allowlist: Allowlist) -> None:
        await allowlist.add(entry("ana"))
        assert await allowlist.revoke(entry("ana").entry_id) is True
        assert await allowlist.revoke(entry("ana").entry_id) is False
        assert await allowlist.entries() == []

    async def test_add_when_revoked_before_allows_again(self, allowlist: Allowlist) -> None:
        await allowlist.add(entry("ana", at=1.0))
        await allowlist.revoke(entry("ana").entry_id, "ana")
        await allowlist.add(entry("ana", at=2.0))
        assert await allowlist.find("ana", "object.delete", "s1") == entry("ana", at=2.0)


class TestMemoryAllowlist(AllowlistContract):
    @pytest.fixture
    def allowlist(self) -> Allowlist:
        return MemoryAllowlist()


@pytest.mark.integration
class TestKvAllowlist(AllowlistContract):
    @pytest.fixture
    def allowlist(self, policy_bus: Bus) -> Allowlist:
        return KvAllowlist(policy_bus.js, policy_bus.prefix)
