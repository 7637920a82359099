"""A Python step is never run again to rebuild a scene (docs/adr/0011): its result image
is loaded instead, both when a later operation of the run is rolled back and when another
delivery recovers a run whose revision was lost."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from contracts.bridge import ToolResult
from contracts.python_steps import code_sha256
from services.executor.domain.results import ResultImages, image_name
from tests.support.fake_bridge import FakeBridge
from tests.support.geonode_fixture import GN_CATALOG
from tests.support.runner_contract import _PORTS, CUBE, PROFILE, Recorder, approved, runner

CODE = "import bpy\nprint(1)"
PYTHON = (
    "py01",
    "python.safe",
    {"code": CODE, "timeout_ms": 1000, "code_sha256": code_sha256(CODE)},
)


class DiceBridge(FakeBridge):
    """A fake whose ``python.safe`` leaves a different scene each time it runs, as code
    reading the clock or randomness would."""

    def __init__(self) -> None:
        super().__init__()
        self.python_runs = 0

    async def call_tool(
        self, name: str, arguments: dict[str, Any], mcp_call_id: str, timeout: float | None = None
    ) -> ToolResult:
        if name != "python.safe":
            return await super().call_tool(name, arguments, mcp_call_id, timeout)
        self.python_runs += 1
        self.scene["Dice"] = {"location": [self.python_runs, 0, 0], "mods": {}}
        return ToolResult(ok=True, data={}, mutated=True, determinism_class="nondeterministic")


def python_runner(bridge: DiceBridge, tmp_path: Path) -> Any:
    run = runner(bridge, tmp_path)
    run.catalog = lambda: GN_CATALOG
    sandboxed = msgspec.structs.replace(PROFILE, sandbox="bubblewrap")
    run.profile = lambda: sandboxed
    return run


@pytest.mark.clause("000-§executor-guarantees.3")
async def test_rollback_when_a_later_op_fails_loads_the_python_result_instead_of_rerunning(
    tmp_path: Path,
) -> None:
    bridge = DiceBridge()
    plan = approved(
        PYTHON,
        CUBE,
        ("op03", "modifier.add", {"object": "Box", "type": "BEVEL", "properties": {"w": "x"}}),
    )
    result = await python_runner(bridge, tmp_path).run(plan, Recorder())
    assert [r.status for r in result.receipts] == ["succeeded", "succeeded", "rolled_back"]
    assert result.receipts[2].scene_hash_after == result.receipts[1].scene_hash_after
    assert bridge.python_runs == 1
    assert bridge.scene["Dice"]["location"] == [1, 0, 0]


@pytest.mark.clause("000-§executor-guarantees.3", "000-§executor-guarantees.8")
async def test_recovery_when_revision_was_lost_loads_the_image_and_never_reruns_code(
    tmp_path: Path,
) -> None:
    bridge = DiceBridge()
    plan = approved(PYTHON, CUBE, request_id="lost", run_id="run-lost")
    full = await python_runner(bridge, tmp_path).run(plan, Recorder())
    store = _PORTS[str(tmp_path)][0]
    del store.heads["s1"]  # the executor died before the revision was committed
    await bridge.reset()
    again = await python_runner(bridge, tmp_path).run(plan, Recorder())
    assert again.failure is None and again.scene_hash == full.scene_hash
    assert bridge.python_runs == 1


async def test_recovery_when_the_image_is_gone_refuses_rather_than_rerunning(
    tmp_path: Path,
) -> None:
    bridge = DiceBridge()
    plan = approved(PYTHON, request_id="gone", run_id="run-gone")
    await python_runner(bridge, tmp_path).run(plan, Recorder())
    store = _PORTS[str(tmp_path)][0]
    del store.heads["s1"]
    journal = _PORTS[str(tmp_path)][2]
    (entry,) = journal.entries.values()
    (store.root / (entry.result_image or "")).unlink()
    await bridge.reset()
    again = await python_runner(bridge, tmp_path).run(plan, Recorder())
    assert again.failure is not None and again.failure.error_code == "IDEMPOTENCY_CONFLICT"
    assert bridge.python_runs == 1


async def test_result_image_when_it_cannot_be_stored_undoes_the_step(tmp_path: Path) -> None:
    class NoRoom:
        async def put_result(self, name: str, blend: Path) -> None:
            raise OSError("no space left on device")

    bridge = DiceBridge()
    run = python_runner(bridge, tmp_path)
    start = await bridge.fingerprint()
    original = ResultImages.keep

    async def keep(self: ResultImages, key: str) -> str:
        self.store = NoRoom()  # type: ignore[assignment]
        return await original(self, key)

    ResultImages.keep = keep  # type: ignore[method-assign]
    try:
        result = await run.run(approved(PYTHON), Recorder())
    finally:
        ResultImages.keep = original  # type: ignore[method-assign]
    assert result.failure is not None and result.failure.error_code == "INTERNAL_ERROR"
    assert "could not be stored for recovery" in result.message
    assert result.receipts[0].status == "rolled_back" and result.scene_hash == start


def test_image_name_when_keys_differ_names_distinct_objects_outside_scene_names() -> None:
    a, b = image_name("u/s/r/op1"), image_name("u/s/r/op2")
    assert a != b and a.startswith("_results/") and "-" not in a
