"""One run through planner, policy, executor, guardians and audit, on both buses: what a
request leads to, in what order, with what contents, and what the scene holds after.

Each test runs on the in-memory bus and on the real mesh (conftest.py); a test names its
own scenes and request ids, since the real mesh's runs of this module share one log.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from contracts.events import Approved, PolicyDecided
from tests.support.flow_buses import Flows, committed, kinds, op, scene_digest

pytestmark = pytest.mark.asyncio(loop_scope="module")

FLAGSHIP = (
    "add a cube named Box at 0 0 1, add a bevel modifier to Box, "
    "then add a uv sphere named Ball at 3 0 1"
)


async def test_plain_request_when_run_goes_through_every_service_in_order(flows: Flows) -> None:
    result = await flows.run("flagship", FLAGSHIP)
    assert result.status == "completed", result
    assert await kinds(flows, result.run_id) == [
        "run.requested",
        "run.planned",
        "run.policy_decided",
        "run.approved",
        *["run.op_started", "run.op_succeeded"] * 3,
        "run.executed",
        "run.gates_evaluated",
        "run.completed",
    ]
    assert [(r.tool_name, r.status) for r in result.receipts] == [
        ("object.create", "succeeded"),
        ("modifier.add", "succeeded"),
        ("object.create", "succeeded"),
    ]
    assert result.gates is not None and result.gates.success
    assert result.blend_path == str(flows.scene_file("flagship"))
    assert await asyncio.to_thread(Path(result.blend_path).is_file)
    doc = await committed(flows, result.run_id)
    objects = {o.name: o for o in doc.objects}
    assert objects["Box"].location == [0.0, 0.0, 1.0]
    assert [m.type for m in objects["Box"].modifiers] == ["BEVEL"]
    assert objects["Ball"].location == [3.0, 0.0, 1.0]
    assert (doc.scene_id, doc.revision, doc.scene_hash) == ("flagship", 1, result.scene_hash)


async def test_audit_views_when_built_again_from_the_whole_log_equal_the_live_ones(
    flows: Flows,
) -> None:
    await flows.run("audited", "add a cube named Audited")
    failed = await flows.run("audited", "move Nobody to 1 1 1")
    waiting = await flows.run("audited", "delete Audited")
    await flows.resolve(waiting.run_id, "reject")
    live = await flows.audit_views()
    assert live["runs"] and live["audit_records"]
    assert await flows.audit_rebuilt() == live
    assert (await flows.audit_run(failed.run_id)).run.state == "failed"


@pytest.mark.clause(
    "000-§audit-record.1",
    "000-§audit-record.2",
    "000-§audit-record.4",
    "000-§audit-record.5",
    "000-§audit-record.6",
    "000-§audit-record.7",
    "000-§audit-record.9",
    "000-§audit-record.10",
)
async def test_plain_request_when_run_ends_audit_views_show_it_and_its_records(
    flows: Flows,
) -> None:
    result = await flows.run("viewed", "add a cube named Seen, add a cube named Also")
    view = await flows.audit_run(result.run_id)
    assert view.run.state == "completed"
    assert [(r.operation_id, r.status) for r in view.audit_records] == [
        ("op01", "succeeded"),
        ("op02", "succeeded"),
        ("gates@1", "gates_passed"),  # the guardians' record of the revision, not an operation
    ]
    requested = (await flows.history(result.run_id))[0].at
    for record, receipt in zip(view.audit_records, result.receipts, strict=False):
        assert requested <= record.timestamp
        assert record.request_id == result.request_id
        assert (record.tool_name, record.safety_level) == ("object.create", "safe_write")
        # The ids of the call that made the change, not ids minted for the record.
        assert record.mcp_call_id == receipt.mcp_call_id and record.mcp_call_id
        assert record.blender_mutation_id == receipt.blender_mutation_id
        assert record.blender_mutation_id
        assert (record.scene_hash_before, record.scene_hash_after) == (
            receipt.scene_hash_before,
            receipt.scene_hash_after,
        )
        assert record.scene_hash_before != record.scene_hash_after
    first, second = view.audit_records[:2]
    assert first.mcp_call_id != second.mcp_call_id  # one id per call
    assert first.blender_mutation_id != second.blender_mutation_id
    assert first.scene_hash_after == second.scene_hash_before  # one chain of hashes
    assert [row.type for row in view.timeline] == await kinds(flows, result.run_id)


@pytest.mark.clause("000-§executor-guarantees.11", "000-§executor-guarantees.13")
async def test_failing_op_when_run_rolls_back_and_names_the_operation(flows: Flows) -> None:
    result = await flows.run("rollback", "add a cube named Here, then move Ghost to 1 2 3")
    assert result.status == "failed"
    assert result.failure is not None and result.failure.error_code != "GATES_FAILED"
    assert result.failure.minimal_repair_plan[0].operation_id == "op02"
    created, failed = result.receipts
    assert created.status == "succeeded" and failed.status == "rolled_back"
    assert failed.scene_hash_after == failed.scene_hash_before == result.scene_hash
    # The operation boundary keeps what succeeded: the run committed its first operation.
    assert [o.name for o in (await committed(flows, result.run_id)).objects] == ["Here"]
    view = await flows.audit_run(result.run_id)
    assert view.run.state == "failed"
    ops = [r.status for r in view.audit_records if not r.operation_id.startswith("gates")]
    assert ops == ["succeeded", "failed", "rolled_back"]


@pytest.mark.clause("000-§executor-guarantees.9")
async def test_run_boundary_when_an_op_fails_leaves_the_scene_as_before_the_run(
    flows: Flows,
) -> None:
    base = await flows.run("whole", "add a cube named Base")
    assert base.status == "completed"
    before = await scene_digest(flows, "whole")
    # A plan as written: the offline planner would refuse to name Ghost before anything ran.
    plan = {
        "request_id": "whole-1",
        "operations": [
            op("op1", "object.create", {"primitive": "cube", "name": "Extra"}),
            op("op2", "object.transform", {"name": "Ghost", "location": [1, 1, 1]}, ["op1"]),
        ],
    }
    result = await flows.run("whole", plan=plan, rollback_boundary="run")
    assert result.status == "failed"
    assert [r.status for r in result.receipts] == ["rolled_back", "rolled_back"]
    assert "run.executed" in await kinds(flows, result.run_id)
    assert await scene_digest(flows, "whole") == before  # nothing committed


@pytest.mark.parametrize(
    ("name", "operations", "code"),
    [
        (
            "cycle",
            [
                op("a", "scene.snapshot", {}, ["b"], "read_only"),
                op("b", "scene.snapshot", {}, ["a"], "read_only"),
            ],
            "GRAPH_CYCLE",
        ),
        (
            "missing",
            [op("a", "object.create", {"primitive": "cube"}, ["nope"])],
            "GRAPH_MISSING_DEPENDENCY",
        ),
        ("unknown_tool", [op("a", "python.exec", {"code": "print(1)"})], "TOOL_UNKNOWN"),
        (
            "extra_property",
            [{**op("a", "object.create", {"primitive": "cube"}), "why": "x"}],
            "SCHEMA_INVALID",
        ),
    ],
)
@pytest.mark.clause("000-§planning.4", "000-§execution.1")
async def test_invalid_plan_when_run_is_rejected_before_policy_and_scene_untouched(
    flows: Flows, name: str, operations: list[dict[str, Any]], code: str
) -> None:
    keep = [op("a", "object.create", {"primitive": "cube", "name": f"Keep_{name}"})]
    base = await flows.run("guarded", plan={"request_id": f"base-{name}", "operations": keep})
    assert base.status == "completed"
    before = await scene_digest(flows, "guarded")
    result = await flows.run(
        "guarded", plan={"request_id": f"bad-{name}", "operations": operations}
    )
    assert result.status == "failed"
    assert result.failure is not None and result.failure.error_code == code
    assert result.receipts == []
    assert await kinds(flows, result.run_id) == ["run.requested", "run.plan_rejected", "run.failed"]
    assert await scene_digest(flows, "guarded") == before


async def test_unreadable_request_when_run_fails_quoting_it(flows: Flows) -> None:
    result = await flows.run("words", "add a cube named A, paint it like van gogh")
    assert result.status == "failed"
    assert result.failure is not None and result.failure.error_code == "REQUEST_UNREADABLE"
    assert '"paint it like van gogh"' in result.message
    assert "run.op_started" not in await kinds(flows, result.run_id)


@pytest.mark.clause("000-§executor-guarantees.1")
async def test_same_request_id_twice_when_submitted_runs_its_operations_once(
    flows: Flows,
) -> None:
    plan = {
        "request_id": "once-1",
        "operations": [op("op1", "object.create", {"primitive": "cube", "name": "Once"})],
    }
    first = await flows.run("twice", plan=plan)
    second = await flows.run("twice", plan=plan)
    assert first.status == second.status == "completed", second
    assert first.run_id != second.run_id
    # The journal answered: the second run's operation never reached Blender.
    assert [r.status for r in second.receipts] == ["skipped_idempotent"]
    assert second.receipts[0].blender_mutation_id == first.receipts[0].blender_mutation_id
    assert [o.name for o in (await committed(flows, first.run_id)).objects] == ["Once"]


@pytest.mark.clause("002-§approvals.4")
async def test_destructive_op_when_approved_completes_naming_the_approver(flows: Flows) -> None:
    made = await flows.run("approve", "add a cube named Keep, add a cube named Doomed")
    assert made.status == "completed", made
    asked = await flows.run("approve", "delete Doomed")
    assert asked.status == "awaiting_confirmation", asked
    assert asked.pending_operations == ["op01"]
    assert asked.approval is not None and asked.approval.request_hash.startswith("sha256:")
    assert await kinds(flows, asked.run_id) == [
        "run.requested",
        "run.planned",
        "run.policy_decided",
        "run.approval_requested",
    ]
    done = await flows.resolve(asked.run_id, "approve_once")
    assert done.status == "completed", done
    assert [r.tool_name for r in done.receipts] == ["object.delete"]
    (approved,) = [e for e in await flows.history(done.run_id) if isinstance(e, Approved)]
    assert approved.approved_by == "ben"
    doc = await committed(flows, done.run_id)
    assert (doc.scene_id, doc.revision) == ("approve", 2)
    assert [o.name for o in doc.objects] == ["Keep"]
    assert doc.run is not None and doc.run.approved_by == "ben"
    assert [(a.decision, a.resolved_by) for a in doc.run.approvals] == [("approve_once", "ben")]
    assert [o.tool_name for o in doc.run.operations] == ["object.delete"]


@pytest.mark.clause("002-§approvals.3")
async def test_destructive_op_when_rejected_fails_and_leaves_the_scene_as_it_was(
    flows: Flows,
) -> None:
    await flows.run("reject", "add a cube named Precious")
    before = await scene_digest(flows, "reject")
    asked = await flows.run("reject", "delete Precious")
    assert asked.status == "awaiting_confirmation"
    done = await flows.resolve(asked.run_id, "reject")
    assert done.status == "failed"
    assert done.failure is not None and done.failure.error_code == "APPROVAL_REJECTED"
    assert "ben rejected op01" in done.message
    assert (await kinds(flows, done.run_id))[-3:] == [
        "run.approval_resolved",
        "run.denied",
        "run.failed",
    ]
    assert await scene_digest(flows, "reject") == before


async def test_destructive_op_when_pre_approved_runs_without_waiting(flows: Flows) -> None:
    await flows.run("pre", "add a cube named Gone")
    result = await flows.run("pre", "delete Gone", pre_approved=True)
    assert result.status == "completed", result
    assert "run.approval_requested" not in await kinds(flows, result.run_id)
    (approved,) = [e for e in await flows.history(result.run_id) if isinstance(e, Approved)]
    assert approved.approved_by == "ana"
    assert (await committed(flows, result.run_id)).objects == []


@pytest.mark.clause("002-§policy.4")
async def test_unsafe_argument_when_planned_is_denied_without_asking_or_running(
    flows: Flows,
) -> None:
    ops = [
        op("far", "object.create", {"primitive": "cube", "name": "Far", "location": [0, 0, 1e7]}),
        op("gone", "object.delete", {"name": "Far"}, ["far"], "destructive"),
    ]
    result = await flows.run("unsafe", plan={"request_id": "unsafe-1", "operations": ops})
    assert result.status == "failed", result
    assert result.failure is not None and result.failure.error_code == "POLICY_BLOCKED"
    assert [(s.operation_id, s.action) for s in result.failure.minimal_repair_plan] == [
        ("far", "replace_args")
    ]
    assert "'location[2]'" in result.message
    assert await kinds(flows, result.run_id) == [
        "run.requested",
        "run.planned",
        "run.policy_decided",
        "run.denied",
        "run.failed",
    ]
    (decided,) = [e for e in await flows.history(result.run_id) if isinstance(e, PolicyDecided)]
    assert [(d.operation_id, d.mode) for d in decided.decisions[:1]] == [("far", "deny")]


@pytest.mark.clause("000-§correlation.2", "000-§correlation.3", "000-§audit-record.5")
async def test_two_runs_of_one_plan_when_committed_give_each_call_and_mutation_its_own_id(
    flows: Flows,
) -> None:
    def plan(request_id: str, name: str) -> dict[str, Any]:
        look = op("look", "scene.snapshot", {}, level="read_only")
        make = op("make", "object.create", {"primitive": "cube", "name": name}, ["look"])
        return {"request_id": request_id, "operations": [look, make]}

    first = await flows.run("ids", plan=plan("ids-1", "One"))
    second = await flows.run("ids", plan=plan("ids-2", "Two"))
    receipts = [*first.receipts, *second.receipts]
    assert [(r.operation_id, r.status) for r in receipts] == [
        ("look", "succeeded"),
        ("make", "succeeded"),
    ] * 2
    calls = [r.mcp_call_id or "" for r in receipts]
    assert all(calls) and len(set(calls)) == 4  # one id per tool invocation, across runs
    assert not set(calls) & {"look", "make"}  # linked to an operation, not the operation's id
    look1, make1, look2, make2 = receipts
    assert look1.blender_mutation_id is None and look2.blender_mutation_id is None  # read-only
    mutations = {make1.blender_mutation_id, make2.blender_mutation_id}
    assert None not in mutations and len(mutations) == 2 and not mutations & set(calls)
    view = await flows.audit_run(second.run_id)
    ops = [r for r in view.audit_records if not r.operation_id.startswith("gates")]
    assert [(r.operation_id, r.mcp_call_id, r.blender_mutation_id) for r in ops] == [
        (r.operation_id, r.mcp_call_id, r.blender_mutation_id) for r in second.receipts
    ]
