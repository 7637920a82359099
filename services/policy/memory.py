"""In-memory fakes of the policy service's ports, for tests of its domain logic."""

from __future__ import annotations

from contracts.allowlist import AllowlistEntry, entry_id


class MemoryAllowlist:
    """Standing approvals in a dict."""

    def __init__(self) -> None:
        self.items: dict[str, AllowlistEntry] = {}

    async def find(self, user: str, tool: str, scene_id: str) -> AllowlistEntry | None:
        return self.items.get(entry_id(user, tool, scene_id))

    async def add(self, entry: AllowlistEntry) -> None:
        self.items[entry.entry_id] = entry

    async def entries(self, user: str | None = None) -> list[AllowlistEntry]:
        return sorted(
            (e for e in self.items.values() if user is None or e.user == user),
            key=lambda e: (e.created_at, e.entry_id),
        )

    async def revoke(self, entry_id: str, user: str | None = None) -> bool:
        entry = self.items.get(entry_id)
        if entry is None or (user is not None and entry.user != user):
            return False
        del self.items[entry_id]
        return True
