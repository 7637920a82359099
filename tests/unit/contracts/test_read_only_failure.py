"""Spec 000 §Executor Guarantees 3: a read_only operation that fails needs no rollback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from contracts.bridge import ToolResult
from contracts.events import OperationFailed, OperationRolledBack
from tests.support.fake_bridge import FakeBridge
from tests.support.runner_contract import CUBE, Recorder, approved, runner


class FailingReads(FakeBridge):
    """A bridge whose snapshot fails, saying it may have changed the scene: a read that
    says so must still not be rolled back, since a read_only tool changes nothing."""

    def __init__(self) -> None:
        super().__init__()
        self.restores = 0
        self.restores_at_read = -1

    async def call_tool(
        self, name: str, arguments: dict[str, Any], mcp_call_id: str, timeout: float | None = None
    ) -> ToolResult:
        if name == "scene.snapshot":
            self.calls.append(mcp_call_id)
            self.restores_at_read = self.restores
            return ToolResult(ok=False, error_code="internal_error", message="no", mutated=True)
        return await super().call_tool(name, arguments, mcp_call_id, timeout)

    async def reset(self) -> str:
        self.restores += 1
        return await super().reset()

    async def load(self, path: str) -> str:
        self.restores += 1
        return await super().load(path)


@pytest.mark.clause("000-§executor-guarantees.10")
async def test_run_when_a_read_only_operation_fails_rolls_nothing_back(tmp_path: Path) -> None:
    bridge = FailingReads()
    run = runner(bridge, tmp_path)
    rec = Recorder()
    result = await run.run(approved(CUBE, ("op02", "scene.snapshot", {})), rec)
    assert [r.status for r in result.receipts] == ["succeeded", "failed"]
    assert result.failure is not None and result.failure.error_code == "INTERNAL_ERROR"
    assert rec.of(OperationRolledBack) == [] and len(rec.of(OperationFailed)) == 1
    # The scene was neither reloaded nor reset: the cube of op01 stays, and is committed.
    assert bridge.restores_at_read >= 0 and bridge.restores == bridge.restores_at_read
    assert "Box" in bridge.scene
    failed = result.receipts[1]
    assert failed.scene_hash_before == result.receipts[0].scene_hash_after
    assert result.scene_hash == result.receipts[0].scene_hash_after
    assert result.blend_path is not None
