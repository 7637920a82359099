"""What the executor needs from the outside world, as small Protocols."""

from __future__ import annotations

from typing import Any, Protocol


class Bridge(Protocol):
    """Port: a Blender bridge process (MCP over stdio) that can be restarted."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], mcp_call_id: str, timeout: float | None = None
    ) -> dict[str, Any]: ...

    async def reset(self) -> str: ...

    async def load(self, path: str) -> str: ...

    async def save(self, path: str, compress: bool = False) -> dict[str, Any]: ...

    async def fingerprint(self) -> str: ...

    async def render_preview(
        self, path: str, width: int = 320, height: int = 240
    ) -> dict[str, Any]:
        """Write a small PNG of the scene to ``path`` without changing the scene."""
        ...

    async def restart(self) -> None:
        """Replace a dead or hung bridge with a fresh one (empty scene)."""
        ...
