"""A real Blender bridge for integration tests: one process a module, reset before each test.

A test module takes its fixtures with ``shared_bridge, bridge = bridge_fixtures()``.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio

from contracts.bridge import ToolResult
from services.executor.bridge_client import BridgeProcess

_call_ids = itertools.count(1)


def bridge_fixtures() -> tuple[Any, Any]:
    """``shared_bridge`` (one bridge process for the module) and ``bridge`` (that bridge,
    its scene reset to empty before each test)."""

    @pytest_asyncio.fixture(scope="module", loop_scope="module", name="shared_bridge")
    async def shared_bridge() -> AsyncIterator[BridgeProcess]:
        process = BridgeProcess()
        await process.start()
        yield process
        await process.close()

    @pytest_asyncio.fixture(loop_scope="module", name="bridge")
    async def bridge(shared_bridge: BridgeProcess) -> BridgeProcess:
        await shared_bridge.reset()
        return shared_bridge

    return shared_bridge, bridge


async def call(bridge: BridgeProcess, tool: str, /, **arguments: Any) -> ToolResult:
    return await bridge.call_tool(tool, arguments, mcp_call_id=f"test-{next(_call_ids)}")


async def ok(bridge: BridgeProcess, tool: str, /, **arguments: Any) -> ToolResult:
    result = await call(bridge, tool, **arguments)
    assert result.ok, result
    return result
