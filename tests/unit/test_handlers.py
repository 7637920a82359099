"""Planner and policy handlers on in-memory ports: every branch returns the right events."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from contracts.events import (
    AnyEvent,
    ApprovalRequested,
    ApprovalResolved,
    Approved,
    Denied,
    Executed,
    Planned,
    PlanRejected,
    PolicyDecided,
    RunCompleted,
    RunFailed,
    follow,
)
from contracts.failures import failure
from contracts.receipts import Receipt
from contracts.resolutions import Resolution
from services.executor.memory import StaticCatalog
from services.policy.cedar import CedarPolicy
from services.policy.handlers import PolicyHandlers
from services.policy.memory import MemoryAllowlist
from services.runtime.service.errors import Retry
from tests.support.catalog_fixture import CATALOG
from tests.support.planners import planner, requested


async def test_planner_when_no_catalog_yet_retries() -> None:
    with pytest.raises(Retry, match="no tool catalog yet: waiting for an executor") as retry:
        await planner(None).on_requested(requested("add a cube"))
    assert retry.value.delay == 0.5  # soon: an executor publishes its catalog as it starts


async def test_planner_when_prompt_readable_emits_planned_with_schedule() -> None:
    (planned,) = await planner().on_requested(requested("add a cube named A, move A to 1 2 3"))
    assert isinstance(planned, Planned)
    assert planned.schedule == ["op01", "op02"] and planned.planner == "rules"
    assert planned.causation_id == "e0" and planned.request_id == "q1"


@pytest.mark.clause("000-§executor-guarantees.1")
async def test_planner_when_same_request_twice_emits_same_event_ids() -> None:
    first = await planner().on_requested(requested("add a cube"))
    second = await planner().on_requested(requested("add a cube"))
    assert [e.event_id for e in first] == [e.event_id for e in second]


async def test_planner_when_prompt_unreadable_rejects_and_fails_run() -> None:
    rejected, failed = await planner().on_requested(requested("juggle the lights"))
    assert isinstance(rejected, PlanRejected) and isinstance(failed, RunFailed)
    assert failed.failure.error_code == "REQUEST_UNREADABLE"
    assert '"juggle the lights"' in failed.message


async def test_planner_when_no_prompt_and_no_plan_fails_run() -> None:
    _, failed = await planner().on_requested(requested())
    assert isinstance(failed, RunFailed) and "neither a prompt nor a plan" in failed.message


async def test_planner_when_backend_unknown_fails_run_naming_it() -> None:
    _, failed = await planner().on_requested(requested("add a cube", planner="oracle"))
    assert isinstance(failed, RunFailed) and "'oracle'" in failed.message


@pytest.mark.clause("002-§core-loop.15")
async def test_planner_when_executed_ok_completes_run() -> None:
    receipt = Receipt(
        operation_id="a", tool_name="scene.snapshot", safety_level="read_only", status="succeeded"
    )
    executed = follow(
        requested(),
        Executed,
        1.0,
        scene_id="s1",
        receipts=[receipt],
        scene_hash="h",
        blend_path="/x.blend",
    )
    (done,) = await planner().on_executed(executed)
    assert isinstance(done, RunCompleted) and done.blend_path == "/x.blend"
    assert done.summary == "1 of 1 operations applied to scene s1"


async def test_planner_when_executed_with_failure_fails_run() -> None:
    executed = follow(
        requested(),
        Executed,
        1.0,
        scene_id="s1",
        receipts=[],
        scene_hash="h",
        blend_path=None,
        failure=failure("TOOL_ERROR", "x"),
        message="m",
    )
    (done,) = await planner().on_executed(executed)
    assert isinstance(done, RunFailed) and done.failure.error_code == "TOOL_ERROR"


def plan_event(*tools: str, pre_approved: bool = False, args: Any = None) -> Planned:
    ops = [
        {
            "operation_id": f"op{i}",
            "tool_name": t,
            "args": args or {},
            "depends_on": [],
            "safety_level": CATALOG.get(t).safety_level if CATALOG.get(t) else "read_only",
        }
        for i, t in enumerate(tools)
    ]
    from contracts.operations import convert_operation_set

    return follow(
        requested(),
        Planned,
        1.0,
        scene_id="s1",
        planner="plan",
        operation_set=convert_operation_set({"request_id": "q1", "operations": ops}),
        schedule=[o["operation_id"] for o in ops],
        catalog_version="test",
        pre_approved=pre_approved,
    )


class History:
    def __init__(self) -> None:
        self.events: list[AnyEvent] = []

    async def __call__(self, run_id: str) -> Sequence[AnyEvent]:
        return self.events


async def nobody(scene_id: str) -> str | None:
    """No scene has an owner yet."""
    return None


# ben resolves ana's approvals in these tests, as a registered approver may.
APPROVERS = frozenset({"ben"})


def policy(history: History | None = None, **kw: Any) -> PolicyHandlers:
    return PolicyHandlers(
        engine=CedarPolicy.load(),
        catalog=StaticCatalog(CATALOG),
        history=history or History(),
        **{
            "clock": lambda: 7.0,
            "allowlist": MemoryAllowlist(),
            "scene_owner": nobody,
            "approvers": lambda: APPROVERS,
            **kw,
        },
    )


@pytest.mark.clause("002-§core-loop.12")
async def test_policy_when_all_safe_approves_by_policy() -> None:
    decided, approved = await policy().on_planned(plan_event("object.create", "scene.snapshot"))
    assert isinstance(decided, PolicyDecided) and isinstance(approved, Approved)
    assert approved.approved_by == "policy"
    assert decided.policy_set == "blendmesh.v1"
    assert decided.policy_set_hash.startswith("sha256:")


@pytest.mark.clause("002-§core-loop.7", "002-§core-loop.8")
async def test_policy_when_destructive_requests_approval() -> None:
    _, asked = await policy().on_planned(plan_event("object.create", "object.delete"))
    assert isinstance(asked, ApprovalRequested) and asked.operation_ids == ["op1"]


async def test_policy_when_destructive_pre_approved_approves_as_user() -> None:
    _, approved = await policy().on_planned(plan_event("object.delete", pre_approved=True))
    assert isinstance(approved, Approved) and approved.approved_by == "ana"


async def test_policy_when_tool_unknown_denies() -> None:
    _, denied = await policy().on_planned(plan_event("python.exec"))
    assert isinstance(denied, Denied) and denied.failure.error_code == "POLICY_BLOCKED"


async def test_policy_when_no_catalog_yet_retries() -> None:
    handlers = PolicyHandlers(
        engine=CedarPolicy.load(),
        catalog=StaticCatalog(None),
        history=History(),
        allowlist=MemoryAllowlist(),
        scene_owner=nobody,
    )
    with pytest.raises(Retry, match="no tool catalog yet") as retry:
        await handlers.on_planned(plan_event("object.create"))
    assert retry.value.delay == 0.5


async def _waiting() -> tuple[History, ApprovalRequested]:
    history = History()
    planned = plan_event("object.delete")
    _, asked = await policy().on_planned(planned)
    assert isinstance(asked, ApprovalRequested)
    history.events = [requested(), planned, asked]
    return history, asked


def resolution(
    asked: ApprovalRequested,
    decision: Resolution,
    approval_id: str | None = None,
    index: int = 0,
) -> ApprovalResolved:
    return follow(
        asked,
        ApprovalResolved,
        8.0,
        index,
        approval_id=approval_id or asked.approval_id,
        decision=decision,
        resolved_by="ben",
        request_hash=asked.request_hash,
    )


@pytest.mark.clause("002-§approvals.4")
async def test_policy_when_approved_once_releases_the_planned_operations() -> None:
    history, asked = await _waiting()
    (approved,) = await policy(history).on_resolved(resolution(asked, "approve_once"))
    assert isinstance(approved, Approved) and approved.approved_by == "ben"
    assert approved.schedule == ["op0"]


@pytest.mark.clause("002-§approvals.3")
async def test_policy_when_rejected_denies_naming_the_operations() -> None:
    history, asked = await _waiting()
    (denied,) = await policy(history).on_resolved(resolution(asked, "reject"))
    assert isinstance(denied, Denied) and denied.failure.error_code == "APPROVAL_REJECTED"
    assert denied.operation_ids == ["op0"] and "ben rejected op0" in denied.message


async def test_policy_when_second_resolution_changes_nothing() -> None:
    history, asked = await _waiting()
    handlers = policy(history)
    first = await handlers.on_resolved(resolution(asked, "approve_once"))
    history.events += [resolution(asked, "approve_once"), *first]
    assert await handlers.on_resolved(resolution(asked, "reject", index=1)) == []


async def test_policy_when_approval_id_does_not_match_changes_nothing() -> None:
    history, asked = await _waiting()
    assert await policy(history).on_resolved(resolution(asked, "approve_once", "other")) == []


async def test_policy_when_scene_belongs_to_another_user_denies_every_operation() -> None:
    async def ben_owns(scene_id: str) -> str | None:
        return "ben"

    decided, denied = await policy(scene_owner=ben_owns).on_planned(plan_event("object.create"))
    assert isinstance(decided, PolicyDecided) and isinstance(denied, Denied)
    assert [d.mode for d in decided.decisions] == ["deny"]
    assert denied.failure.error_code == "POLICY_BLOCKED"
    assert "scene s1 belongs to another user" in denied.message


async def test_policy_when_scene_is_the_users_own_allows() -> None:
    async def ana_owns(scene_id: str) -> str | None:
        return "ana"

    decided, approved = await policy(scene_owner=ana_owns).on_planned(plan_event("object.create"))
    assert isinstance(decided, PolicyDecided) and [d.mode for d in decided.decisions] == ["allow"]
    assert isinstance(approved, Approved) and approved.approved_by == "policy"
    assert approved.schedule == ["op0"]
