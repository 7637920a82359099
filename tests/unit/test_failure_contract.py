"""Every failure path returns exactly the spec 000 failure contract:
{error_code, recoverable, retry_hint, minimal_repair_plan}."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from contracts.events import Denied
from contracts.failures import FailureContract
from contracts.session import BUS, negotiate
from services.executor.domain.capability import gate
from services.planner.graph import PlanInvalid, validate
from tests.support.catalog_fixture import CATALOG
from tests.support.fake_bridge import FakeBridge
from tests.support.runner_contract import CUBE, PROFILE, Recorder, approved, runner
from tests.unit.test_handlers import _waiting, plan_event, policy, resolution

KEYS = {"error_code", "recoverable", "retry_hint", "minimal_repair_plan"}


def plan_failure(raw: Any) -> FailureContract:
    with pytest.raises(PlanInvalid) as info:
        validate(raw, CATALOG)
    return info.value.failure


def op(op_id: str, tool: str = "scene.snapshot", deps: list[str] | None = None) -> dict[str, Any]:
    return {
        "operation_id": op_id,
        "tool_name": tool,
        "args": {},
        "depends_on": deps or [],
        "safety_level": "read_only",
    }


class BrokenRestore(FakeBridge):
    """A bridge that loads the scene once, then cannot load a checkpoint back."""

    loads = 0

    async def load(self, path: str) -> str:
        self.loads += 1
        if self.loads > 1:
            raise OSError("disk gone")
        return await super().load(path)


async def collect(tmp_path: Path) -> dict[str, FailureContract]:
    found: dict[str, FailureContract] = {
        "schema": plan_failure({"request_id": "r", "operations": [{**op("a"), "x": 1}]}),
        "graph_cycle": plan_failure(
            {"request_id": "r", "operations": [op("a", deps=["b"]), op("b", deps=["a"])]}
        ),
        "graph_missing": plan_failure({"request_id": "r", "operations": [op("a", deps=["z"])]}),
        "tool_unknown": plan_failure({"request_id": "r", "operations": [op("a", "nope")]}),
    }
    _, denied = await policy().on_planned(plan_event("python.exec"))
    assert isinstance(denied, Denied)
    found["policy_denied"] = denied.failure
    history, asked = await _waiting()
    (rejected,) = await policy(history).on_resolved(resolution(asked, "reject"))
    assert isinstance(rejected, Denied)
    found["approval_rejected"] = rejected.failure
    old = msgspec.structs.replace(PROFILE, version_tuple=(3, 6, 0))
    refusal = gate(approved(CUBE).operation_set.operations, CATALOG, negotiate(BUS, old))
    assert refusal is not None and refusal.code == "capability_missing"
    found["capability"] = refusal.contract

    bridge = FakeBridge()
    ghost = ("op01", "object.transform", {"name": "Ghost", "location": [1, 1, 1]})
    found["tool_error"] = (await runner(bridge, tmp_path).run(approved(ghost), Recorder())).failure
    slow = await runner(bridge, tmp_path, timeout=0.000001).run(approved(CUBE), Recorder())
    found["timeout"] = slow.failure
    await runner(bridge, tmp_path).run(approved(CUBE, request_id="idem"), Recorder())
    other = ("op01", "object.create", {"primitive": "cube", "name": "Else"})
    found["idempotency"] = (
        await runner(bridge, tmp_path).run(approved(other, request_id="idem"), Recorder())
    ).failure
    broken = tmp_path / "broken"
    bad = BrokenRestore()
    await runner(bad, broken).run(approved(CUBE), Recorder())
    partial = (
        "op01",
        "modifier.add",
        {"object": "Box", "type": "BEVEL", "properties": {"width": "wide"}},
    )
    found["rollback"] = (await runner(bad, broken).run(approved(partial), Recorder())).failure
    return {k: v for k, v in found.items() if v is not None}


@pytest.mark.clause(
    "000-§execution.5",
    "000-§failure-contract.1",
    "000-§failure-contract.2",
    "000-§failure-contract.3",
    "000-§failure-contract.4",
    "000-§failure-contract.5",
    "000-§failure-contract.6",
    "000-§failure-contract.7",
    "000-§failure-contract.8",
    "000-§failure-contract.9",
    "000-§failure-contract.10",
    "000-§failure-contract.11",
    "000-§executor-guarantees.12",
)
async def test_every_failure_path_when_taken_returns_exactly_the_contract(tmp_path: Path) -> None:
    found = await collect(tmp_path)
    assert set(found) == {
        "schema",
        "graph_cycle",
        "graph_missing",
        "tool_unknown",
        "policy_denied",
        "approval_rejected",
        "capability",
        "tool_error",
        "timeout",
        "idempotency",
        "rollback",
    }
    codes = {name: f.error_code for name, f in found.items()}
    assert codes == {
        "schema": "SCHEMA_INVALID",
        "graph_cycle": "GRAPH_CYCLE",
        "graph_missing": "GRAPH_MISSING_DEPENDENCY",
        "tool_unknown": "TOOL_UNKNOWN",
        "policy_denied": "POLICY_BLOCKED",
        "approval_rejected": "APPROVAL_REJECTED",
        "capability": "CAPABILITY_MISSING",
        "tool_error": "TOOL_ERROR",
        "timeout": "TOOL_TIMEOUT",
        "idempotency": "IDEMPOTENCY_CONFLICT",
        "rollback": "ROLLBACK_FAILED",
    }
    for name, contract in found.items():
        as_json = msgspec.json.decode(msgspec.json.encode(contract))
        assert set(as_json) == KEYS, name
        assert isinstance(as_json["recoverable"], bool) and as_json["retry_hint"], name
        for step in as_json["minimal_repair_plan"]:
            assert set(step) == {"operation_id", "action"}, name
            assert step["action"] in {"retry", "replace_args", "drop", "insert_precondition"}
    assert found["rollback"].recoverable is False
