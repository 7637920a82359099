"""Spec 001 Phase 2: the capability gate judges a plan against the run's negotiated session
contract (host profile x Blender profile, the caller's determinism, the operator's opt-in)
and refuses with 001's own codes, before anything runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import msgspec
import pytest

from contracts.events import Approved, Executed, RunRequested, follow
from contracts.operations import Operation
from contracts.session import BUS, CLI, HOSTS, HTTP, MCP_STDIO, HostProfile, negotiate
from contracts.tools import ToolCatalog
from services.executor.domain.capability import gate
from services.executor.domain.failures import contract_code, tool_failure
from services.executor.domain.runner import PlanRunner
from services.executor.handlers import ExecutorHandlers
from services.runtime.service.publishers import PipelinedPublisher
from tests.support.registry_tools import RegistryBridge, registered
from tests.support.runner_contract import PROFILE, Recorder, approved, runner
from tests.unit.test_handlers import History, policy, requested

HEADED = msgspec.structs.replace(PROFILE, background=False)


@pytest.fixture
def catalog() -> Iterator[ToolCatalog]:
    with registered() as tools:
        yield tools


def op(tool: str, args: dict[str, Any] | None = None, op_id: str = "op01") -> Operation:
    level = "read_only" if tool == "test.ui_panel" else "safe_write"
    return Operation(
        operation_id=op_id,
        tool_name=tool,
        args={"name": "Box"} if args is None else args,
        depends_on=[],
        safety_level=level,
    )


@pytest.mark.clause(
    "001-§safety-modes.3", "001-§capability-gate.2", "001-§capability-gate.6", "001-§error-codes.3"
)
def test_gate_when_ui_assisted_tool_meets_headless_blender_refuses_capability_missing(
    catalog: ToolCatalog,
) -> None:
    refusal = gate([op("test.ui_panel")], catalog, negotiate(BUS, PROFILE))
    assert refusal is not None and refusal.code == "capability_missing"
    assert refusal.contract.error_code == "CAPABILITY_MISSING"
    assert "needs Blender's UI" in refusal.contract.retry_hint
    assert gate([op("test.ui_panel")], catalog, negotiate(BUS, HEADED)) is None


@pytest.mark.clause(
    "001-§safety-modes.4", "001-§capability-gate.5", "001-§capability-gate.6", "001-§error-codes.4"
)
def test_gate_when_unsafe_ops_tool_without_opt_in_refuses_policy_refused(
    catalog: ToolCatalog,
) -> None:
    refusal = gate([op("test.unsafe_op")], catalog, negotiate(BUS, PROFILE))
    assert refusal is not None and refusal.code == "policy_refused"
    assert refusal.contract.error_code == "POLICY_BLOCKED"
    assert "BLENDMESH_ALLOW_UNSAFE_OPS" in refusal.contract.retry_hint
    allowed = negotiate(BUS, PROFILE, allow_unsafe=True)
    assert gate([op("test.unsafe_op")], catalog, allowed) is None


@pytest.mark.clause("001-§determinism.3", "001-§error-codes.8", "001-§execute.2")
def test_gate_when_determinism_required_refuses_nondeterministic_and_keeps_seeded(
    catalog: ToolCatalog,
) -> None:
    strict = negotiate(BUS, PROFILE, determinism="required")
    refusal = gate([op("test.noise")], catalog, strict)
    assert refusal is not None and refusal.code == "nondeterministic_refused"
    assert refusal.operation_id == "op01"
    assert "nondeterministic" in refusal.contract.retry_hint
    assert refusal.contract.minimal_repair_plan[0].action == "drop"
    assert (
        gate([op("test.scatter"), op("object.create", {"primitive": "cube"})], catalog, strict)
        is None
    )
    assert gate([op("test.noise")], catalog, negotiate(BUS, PROFILE)) is None


@pytest.mark.clause("001-§capability-gate.1", "001-§core-concepts.2")
def test_gate_when_arguments_exceed_the_hosts_payload_refuses_naming_the_limit(
    catalog: ToolCatalog,
) -> None:
    small = HostProfile(
        transport="mcp_stdio", max_payload_bytes=64, streaming=True, cancellation=False
    )
    big = op("test.noise", {"name": "B" * 60})
    refusal = gate([big], catalog, negotiate(small, PROFILE))
    assert refusal is not None and refusal.code == "capability_missing"
    assert "the mcp_stdio host carries at most 64" in refusal.contract.retry_hint
    assert gate([big], catalog, negotiate(MCP_STDIO, PROFILE)) is None


@pytest.mark.clause("001-§capability-gate.3", "001-§safety-modes.5")
def test_gate_when_tool_is_unknown_or_blender_too_old_refuses_capability_missing(
    catalog: ToolCatalog,
) -> None:
    unknown = gate([op("test.missing")], catalog, negotiate(BUS, PROFILE))
    assert unknown is not None and unknown.code == "capability_missing"
    assert unknown.contract.recoverable is True
    old = msgspec.structs.replace(PROFILE, version_tuple=(4, 1, 0))
    too_old = gate([op("test.noise")], catalog, negotiate(BUS, old))
    assert too_old is not None and too_old.code == "capability_missing"
    assert "needs Blender 4.2.0; this bridge runs 4.1.0" in too_old.contract.retry_hint


@pytest.mark.clause("001-§core-concepts.2")
def test_every_door_declares_a_host_profile_with_its_transport() -> None:
    assert set(HOSTS) == {"mcp_stdio", "mcp_http", "http", "bus", "cli"}
    for transport, host in HOSTS.items():
        assert host.transport == transport and host.max_payload_bytes > 0
    with pytest.raises(msgspec.ValidationError, match="max_payload_bytes"):
        msgspec.convert(
            {"transport": "http", "max_payload_bytes": 0, "streaming": True, "cancellation": False},
            HostProfile,
        )


@pytest.mark.clause("001-§core-concepts.2")
def test_request_without_a_host_decodes_as_one_from_the_bus() -> None:
    raw = msgspec.json.encode(requested("add a cube"))
    data = msgspec.json.decode(raw)
    del data["host"], data["determinism"]
    old = msgspec.convert(data, RunRequested)
    assert (old.host, old.determinism) == (BUS, "any")
    with pytest.raises(msgspec.ValidationError, match="determinism"):
        msgspec.convert({**data, "determinism": "maybe"}, RunRequested)


@pytest.mark.clause("001-§core-concepts.4", "001-§capability-gate.1")
def test_contract_when_runner_negotiates_takes_the_requests_host_and_the_operators_opt_in(
    tmp_path: Path,
) -> None:
    run = runner(RegistryBridge(), tmp_path)
    run.allow_unsafe = True
    contract = run.contract(requested("x", host=HTTP, determinism="required"))
    assert (contract.host, contract.blender, contract.determinism) == (HTTP, PROFILE, "required")
    assert contract.allow_unsafe is True
    assert run.contract(None).host == BUS and run.contract(None).determinism == "any"


@pytest.mark.clause("001-§safety-modes.4", "001-§capability-gate.5")
async def test_run_when_unsafe_ops_opted_in_reaches_the_tool_and_without_it_runs_nothing(
    catalog: ToolCatalog, tmp_path: Path
) -> None:
    bridge = RegistryBridge()
    refused = runner(bridge, tmp_path)
    refused.catalog = lambda: catalog
    plan = ("op01", "test.unsafe_op", {"name": "Risky"})
    result = await refused.run(approved(plan), Recorder(), requested=requested("x", host=CLI))
    assert result.failure is not None and result.failure.error_code == "POLICY_BLOCKED"
    assert [(r.status, r.error_code) for r in result.receipts] == [("failed", "policy_refused")]
    assert bridge.calls == []
    opted = runner(bridge, tmp_path)
    opted.catalog = lambda: catalog
    opted.allow_unsafe = True
    done = await opted.run(approved(plan), Recorder(), requested=requested("x", host=CLI))
    assert done.failure is None and [r.status for r in done.receipts] == ["succeeded"]
    assert len(bridge.calls) == 1


@pytest.mark.clause("001-§determinism.3", "001-§error-codes.8")
async def test_run_when_determinism_required_refuses_nondeterministic_before_anything_runs(
    catalog: ToolCatalog, tmp_path: Path
) -> None:
    bridge = RegistryBridge()
    run = runner(bridge, tmp_path)
    run.catalog = lambda: catalog
    cube = ("op01", "object.create", {"primitive": "cube", "name": "Box"})
    noise = ("op02", "test.noise", {"name": "Box"})
    rec = Recorder()
    strict = requested("x", determinism="required")
    result = await run.run(approved(cube, noise), rec, requested=strict)
    assert result.failure is not None and result.failure.error_code == "CAPABILITY_MISSING"
    assert [(r.operation_id, r.status, r.error_code) for r in result.receipts] == [
        ("op01", "skipped", None),
        ("op02", "failed", "nondeterministic_refused"),
    ]
    assert [r.determinism_class for r in result.receipts] == ["deterministic", "nondeterministic"]
    assert bridge.calls == [] and rec.events == [] and result.blend_path is None
    relaxed = await run.run(approved(cube, noise), Recorder(), requested=requested("x"))
    assert relaxed.failure is None


class RecordingRunner:
    """Takes what the handler hands the runner, and answers a plain result."""

    def __init__(self) -> None:
        self.requests: list[RunRequested | None] = []

    async def run(
        self, event: Approved, emit: Any, record: Any, req: Any = None, flush: Any = None
    ) -> Executed:
        self.requests.append(req)
        return follow(
            event, Executed, 1.0, scene_id="s1", receipts=[], scene_hash="h", blend_path=None
        )

    async def preview(self, executed: Executed) -> None:
        return None


class Pipeline:
    async def send(self, event: Any) -> None:
        return None

    async def settle(self) -> None:
        return None

    def flush(self) -> None:
        return None


@pytest.mark.clause("001-§capability-gate.1", "001-§core-concepts.4")
async def test_executor_handler_when_approved_hands_the_runs_request_to_the_gate() -> None:
    from tests.unit.test_handlers import plan_event

    strict = requested(determinism="required", host=HTTP)
    planned = plan_event("object.create")
    decided, approval = await policy().on_planned(planned)
    assert isinstance(approval, Approved)
    history = History()
    history.events = [strict, planned, decided, approval]
    recording = RecordingRunner()
    handlers = ExecutorHandlers(
        runner=cast(PlanRunner, recording),
        progress=lambda: cast(PipelinedPublisher, Pipeline()),
        history=history,
        catalog_version=lambda: "test",
    )
    await handlers.on_approved(approval)
    assert recording.requests == [strict]


@pytest.mark.clause("001-§error-codes.8", "001-§error-codes.4")
def test_tool_codes_when_a_tool_refuses_at_run_time_map_like_the_gates() -> None:
    refused = tool_failure("op01", "test.noise", "nondeterministic_refused", "no seed here")
    assert (refused.error_code, refused.minimal_repair_plan[0].action) == (
        "CAPABILITY_MISSING",
        "drop",
    )
    assert tool_failure("op01", "t", "policy_refused", "no").error_code == "POLICY_BLOCKED"
    assert contract_code("capability_missing") == "CAPABILITY_MISSING"
    assert contract_code("no_such_code") == "INTERNAL_ERROR"
