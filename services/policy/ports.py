"""What the policy service needs from the outside world, as small Protocols.

The in-memory fake of each port is in ``memory.py`` beside it; ``tests/contract/`` holds
the fake and the real adapter to the same behaviour.
"""

from __future__ import annotations

from typing import Protocol

from contracts.allowlist import AllowlistEntry
from contracts.errors import BlendmeshError


class AllowlistError(BlendmeshError):
    """The allowlist could not be read or changed; the message says what to do."""


class AllowlistRefused(AllowlistError):
    """The policy service answered, and refused (e.g. no such entry)."""


class Allowlist(Protocol):
    """Port: the standing approvals."""

    async def find(self, user: str, tool: str, scene_id: str) -> AllowlistEntry | None: ...

    async def add(self, entry: AllowlistEntry) -> None: ...

    async def entries(self, user: str | None = None) -> list[AllowlistEntry]: ...

    async def revoke(self, entry_id: str, user: str | None = None) -> bool:
        """Remove an entry; False when there is none (or it is another user's)."""
        ...
