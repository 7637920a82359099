"""Spec 002 §10 (no parallel tool execution): a run's operations reach Blender one at a time,
each after the one before has answered, in the schedule's order, even when none depends on
another and every call is slow."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from contracts.bridge import ToolResult
from contracts.events import OperationSucceeded
from tests.support.fake_bridge import FakeBridge
from tests.support.runner_contract import Recorder, approved, runner


class Overlaps(FakeBridge):
    """A bridge whose calls take a while and that counts how many are in flight at once."""

    def __init__(self) -> None:
        super().__init__()
        self.in_flight = 0
        self.most = 0
        self.order: list[str] = []

    async def call_tool(
        self, name: str, arguments: dict[str, Any], mcp_call_id: str, timeout: float | None = None
    ) -> ToolResult:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        try:
            await asyncio.sleep(0.02)  # room for a second call to start, were one allowed
            self.order.append(str(arguments.get("name")))
            return await super().call_tool(name, arguments, mcp_call_id, timeout)
        finally:
            self.in_flight -= 1


@pytest.mark.clause("002-§non-goals.1", "000-§execution.2")
async def test_run_when_operations_are_independent_calls_blender_one_at_a_time(
    tmp_path: Path,
) -> None:
    bridge = Overlaps()
    ops = [(f"op{n}", "object.create", {"primitive": "cube", "name": f"C{n}"}) for n in range(4)]
    events = Recorder()
    result = await runner(bridge, tmp_path).run(approved(*ops), events)
    assert result.failure is None
    assert bridge.most == 1
    assert bridge.order == ["C0", "C1", "C2", "C3"]
    assert [e.operation_id for e in events.of(OperationSucceeded)] == ["op0", "op1", "op2", "op3"]
