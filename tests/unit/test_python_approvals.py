"""Trusted Python runs only after a person approved that exact code (issue 12): the
policy asks, counts a resolution only if it quotes the code's hash, keys an always-allow
by the hash; the executor checks the same in the run's log; the run record names who
approved each step."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from contracts.events import (
    ApprovalRequested,
    ApprovalResolved,
    Approved,
    Denied,
    Planned,
    PolicyDecided,
    follow,
)
from contracts.limits import argument_problem
from contracts.operations import convert_operation_set
from contracts.python_approvals import code_problem, standing_key, trusted_hashes, unquoted
from contracts.python_steps import code_sha256
from contracts.session import BUS, negotiate
from services.executor.domain.authority import unbacked
from services.executor.domain.capability import gate
from services.executor.domain.inspection import python_steps
from services.executor.memory import StaticCatalog
from services.policy.cedar import CedarPolicy
from services.policy.handlers import PolicyHandlers
from services.policy.memory import MemoryAllowlist
from tests.support.geonode_fixture import GN_CATALOG
from tests.support.runner_contract import PROFILE
from tests.unit.test_handlers import History, nobody, requested

CODE = "import bpy\nprint(len(bpy.data.objects))"
OTHER = "import bpy\nprint('something else')"


def python_op(code: str = CODE, mode: str = "trusted", **args: Any) -> dict[str, Any]:
    return {
        "operation_id": f"py-{mode}",
        "tool_name": f"python.{mode}",
        "args": {"code": code, "timeout_ms": 2000, "code_sha256": code_sha256(code), **args},
        "depends_on": [],
        "safety_level": "destructive" if mode == "trusted" else "safe_write",
    }


def planned(*ops: dict[str, Any], pre_approved: bool = False) -> Planned:
    return follow(
        requested(pre_approved=pre_approved),
        Planned,
        1.0,
        scene_id="s1",
        planner="plan",
        operation_set=convert_operation_set({"request_id": "q1", "operations": list(ops)}),
        schedule=[o["operation_id"] for o in ops],
        catalog_version="test",
        pre_approved=pre_approved,
    )


def handlers(history: History, allowlist: MemoryAllowlist | None = None) -> PolicyHandlers:
    return PolicyHandlers(
        engine=CedarPolicy.load(),
        catalog=StaticCatalog(GN_CATALOG),
        history=history,
        allowlist=allowlist or MemoryAllowlist(),
        scene_owner=nobody,
        clock=lambda: 7.0,
    )


def resolve(
    asked: ApprovalRequested, decision: str = "approve_once", **kw: Any
) -> ApprovalResolved:
    fields: dict[str, Any] = {
        "approval_id": asked.approval_id,
        "decision": decision,
        "resolved_by": "ana",
        "request_hash": asked.request_hash,
        **kw,
    }
    return follow(asked, ApprovalResolved, 8.0, **fields)


async def ask(
    plan: Planned, allowlist: MemoryAllowlist | None = None
) -> tuple[PolicyHandlers, History, ApprovalRequested]:
    history = History()
    policy_ = handlers(history, allowlist)
    decided, asked = await policy_.on_planned(plan)
    assert isinstance(asked, ApprovalRequested), asked
    history.events = [requested(pre_approved=plan.pre_approved), plan, decided, asked]
    return policy_, history, asked


# -- the rules, pure -------------------------------------------------------------------


def test_code_problem_when_hash_names_other_code_says_which_hash_is_right() -> None:
    args = {"code": CODE, "code_sha256": code_sha256(OTHER)}
    problem = code_problem("python.safe", args)
    assert problem is not None and code_sha256(CODE) in problem
    assert code_problem("python.safe", {"code": CODE, "code_sha256": "md5:1"}) is not None
    assert code_problem("python.trusted", {"code": CODE, "code_sha256": code_sha256(CODE)}) is None
    assert code_problem("object.create", {}) is None


def test_trusted_hashes_when_safe_and_repeated_steps_lists_each_trusted_code_once() -> None:
    ops = [
        ("python.trusted", {"code_sha256": "a"}),
        ("python.safe", {"code_sha256": "b"}),
        ("python.trusted", {"code_sha256": "a"}),
        ("python.trusted", {"code_sha256": "c"}),
    ]
    assert trusted_hashes(ops) == ["a", "c"]
    assert unquoted(ops, ["c"]) == ["a"]
    assert standing_key("python.trusted", {"code_sha256": "a"}) == "python.trusted@a"
    assert standing_key("object.delete", {"code_sha256": "a"}) == "object.delete"


# -- policy -----------------------------------------------------------------------------


async def test_policy_when_safe_python_allows_it_without_a_person() -> None:
    decided, approved = await handlers(History()).on_planned(planned(python_op(mode="safe")))
    assert isinstance(decided, PolicyDecided) and isinstance(approved, Approved)
    assert [(d.operation_id, d.mode) for d in decided.decisions] == [("py-safe", "allow")]
    assert approved.approved_by == "policy"


@pytest.mark.clause("004-§python.3")
async def test_policy_when_trusted_python_asks_showing_the_code_and_its_hash() -> None:
    _, _, asked = await ask(planned(python_op()))
    (pending,) = asked.operations
    assert pending.tool == "python.trusted"
    assert pending.args["code"] == CODE and pending.args["code_sha256"] == code_sha256(CODE)


@pytest.mark.clause("004-§python.3")
async def test_policy_when_trusted_python_pre_approved_still_asks() -> None:
    _, _, asked = await ask(planned(python_op(), pre_approved=True))
    assert asked.operation_ids == ["py-trusted"]
    assert asked.reason == "py-trusted: python.trusted is destructive; a person must approve it"
    (pending,) = asked.operations
    assert pending.args["code_sha256"] == code_sha256(CODE)  # the person sees what to quote


async def test_policy_when_code_hash_does_not_match_the_code_denies() -> None:
    op = python_op(code_sha256=code_sha256(OTHER))
    decided, denied = await handlers(History()).on_planned(planned(op))
    assert isinstance(decided, PolicyDecided) and isinstance(denied, Denied)
    assert "is not the hash of its code" in denied.message


@pytest.mark.clause("004-§python.3")
async def test_resolution_when_it_does_not_quote_the_code_hash_changes_nothing() -> None:
    policy_, _, asked = await ask(planned(python_op()))
    assert await policy_.on_resolved(resolve(asked)) == []
    wrong = resolve(asked, code_sha256=[code_sha256(OTHER)])
    assert await policy_.on_resolved(wrong) == []


async def test_resolution_when_it_quotes_the_code_hash_approves_the_run() -> None:
    policy_, _, asked = await ask(planned(python_op()))
    (approved,) = await policy_.on_resolved(resolve(asked, code_sha256=[code_sha256(CODE)]))
    assert isinstance(approved, Approved) and approved.approved_by == "ana"


async def test_rejection_when_it_quotes_no_hash_still_rejects() -> None:
    policy_, _, asked = await ask(planned(python_op()))
    (denied,) = await policy_.on_resolved(resolve(asked, "reject"))
    assert isinstance(denied, Denied) and denied.failure.error_code == "APPROVAL_REJECTED"
    assert denied.message == "ana rejected py-trusted"
    assert denied.operation_ids == ["py-trusted"]


@pytest.mark.clause("004-§python.3")
async def test_always_allow_when_given_for_trusted_code_covers_that_code_only() -> None:
    allowlist = MemoryAllowlist()
    policy_, _, asked = await ask(planned(python_op()), allowlist)
    always = resolve(asked, "approve_and_always_allow", code_sha256=[code_sha256(CODE)])
    await policy_.on_resolved(always)
    (entry,) = await allowlist.entries()
    assert entry.tool == "python.trusted" and entry.code_sha256 == code_sha256(CODE)

    decided, approved = await handlers(History(), allowlist).on_planned(planned(python_op()))
    assert isinstance(approved, Approved)
    assert isinstance(decided, PolicyDecided)
    assert decided.decisions[0].policy_ids == [f"allowlist#{entry.entry_id}"]
    await ask(planned(python_op(OTHER)), allowlist)  # other code: asked again


# -- the executor's check and the run record --------------------------------------------


async def test_authority_when_resolution_quotes_the_code_hash_backs_the_run() -> None:
    policy_, history, asked = await ask(planned(python_op()))
    resolved = resolve(asked, code_sha256=[code_sha256(CODE)])
    (approved,) = await policy_.on_resolved(resolved)
    assert isinstance(approved, Approved)
    assert unbacked(approved, [*history.events, resolved]) is None


async def test_authority_when_a_forged_resolution_does_not_quote_the_code_refuses() -> None:
    policy_, history, asked = await ask(planned(python_op()))
    honest = resolve(asked, code_sha256=[code_sha256(CODE)])
    (approved,) = await policy_.on_resolved(honest)
    assert isinstance(approved, Approved)
    forged = msgspec.structs.replace(honest, code_sha256=[])
    reason = unbacked(approved, [*history.events, forged])
    assert reason is not None and "nobody approved py-trusted" in reason


async def test_authority_when_trusted_code_only_pre_approved_refuses() -> None:
    plan = planned(python_op(), pre_approved=True)
    _, history, asked = await ask(plan)
    forged = follow(
        asked,
        Approved,
        9.0,
        scene_id="s1",
        operation_set=plan.operation_set,
        schedule=plan.schedule,
        approved_by="ana",
    )
    reason = unbacked(forged, history.events)
    assert reason is not None and "nobody approved py-trusted" in reason


async def test_run_record_when_code_was_approved_names_the_person_per_step() -> None:
    safe, trusted = python_op(OTHER, mode="safe"), python_op()
    policy_, history, asked = await ask(planned(safe, trusted))
    resolved = resolve(asked, code_sha256=[code_sha256(CODE)])
    (approved,) = await policy_.on_resolved(resolved)
    assert isinstance(approved, Approved)
    steps = python_steps(approved, [*history.events, resolved])
    assert [(s.mode, s.code_sha256, s.approved_by) for s in steps] == [
        ("safe", code_sha256(OTHER), None),
        ("trusted", code_sha256(CODE), "ana"),
    ]


def test_arguments_when_code_holds_line_breaks_pass_and_other_controls_are_refused() -> None:
    assert argument_problem({"code": "a = 1\n\tb = 2\r\n"}) is None
    assert argument_problem({"code": "a = 1\x00"}) == (
        "argument 'code' contains a control character (U+0000); use printable text"
    )
    assert argument_problem({"code": "\x1b[2J"}) is not None
    assert argument_problem({"name": "Box\nBall"}) is not None  # a name is no source code
    assert argument_problem({"nested": {"code": "a\nb"}}) is not None


@pytest.mark.clause("001-§capability-gate.4", "001-§capability-gate.6")
def test_capability_gate_when_bridge_has_no_sandbox_refuses_python_before_anything_runs() -> None:
    plan = planned(python_op(mode="safe"))
    ops = plan.operation_set.operations
    unconfined = msgspec.structs.replace(PROFILE, sandbox="none")
    refusal = gate(ops, GN_CATALOG, negotiate(BUS, unconfined))
    assert refusal is not None and refusal.contract.error_code == "CAPABILITY_MISSING"
    assert refusal.code == "capability_missing"
    hint = refusal.contract.retry_hint
    assert "never run unconfined" in hint and "bubblewrap" in hint
    sandboxed = msgspec.structs.replace(PROFILE, sandbox="bubblewrap")
    assert gate(ops, GN_CATALOG, negotiate(BUS, sandboxed)) is None
