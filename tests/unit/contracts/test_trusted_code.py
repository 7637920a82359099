"""Trusted Python as the doors show it: the code, its hash, and what an approval quotes."""

from __future__ import annotations

from contracts.events import (
    ApprovalRequested,
    ApprovalResolved,
    Denied,
    Planned,
    follow,
)
from contracts.failures import failure
from contracts.fold import fold_run
from contracts.operations import Operation, OperationSet
from contracts.python_steps import code_sha256
from contracts.trusted_code import code_hashes, numbered, quote_problem, trusted_code, visible
from tests.support.trusted_runs import CODE, RUN, asked, delete_op, python_op, requested

OTHER = "print('other')"


def test_trusted_code_when_mixed_operations_lists_only_trusted_with_their_hashes() -> None:
    ops = [delete_op(), python_op("op2", CODE), python_op("op3", OTHER, tool="python.safe")]
    assert trusted_code(ops) == [("op2", CODE, code_sha256(CODE))]
    assert code_hashes(ops) == [code_sha256(CODE)]


def test_code_hashes_when_same_code_twice_lists_it_once() -> None:
    ops = [python_op("op1", CODE), python_op("op2", OTHER), python_op("op3", CODE)]
    assert code_hashes(ops) == [code_sha256(CODE), code_sha256(OTHER)]


def test_quote_problem_when_every_hash_quoted_is_none() -> None:
    ops = [python_op("op1", CODE), python_op("op2", OTHER)]
    assert quote_problem(ops, [code_sha256(OTHER), code_sha256(CODE)]) is None
    assert quote_problem([delete_op()], []) is None  # nothing trusted: nothing to quote


def test_quote_problem_when_one_missing_names_its_hash_and_operation() -> None:
    ops = [python_op("op1", CODE), python_op("op2", OTHER)]
    problem = quote_problem(ops, [code_sha256(CODE)])
    assert problem is not None
    assert f"missing {code_sha256(OTHER)} (operation op2)" in problem
    assert code_sha256(CODE) not in problem


def test_visible_when_code_hides_characters_escapes_them_and_keeps_tabs() -> None:
    hidden = "x = '\u202eevil'\x1b[2J\u200b\tok"
    assert visible(hidden) == "x = '\\u202eevil'\\u001b[2J\\u200b\tok"


def test_numbered_when_code_has_crlf_and_other_breaks_numbers_real_lines_only() -> None:
    assert numbered("a = 1\r\nb = 2\x0cc = 3") == ["1 | a = 1", "2 | b = 2\\u000cc = 3"]
    assert numbered("\n".join(["x"] * 10))[0] == " 1 | x"


def test_fold_when_run_waits_carries_the_approval_with_args_and_code_hashes() -> None:
    result = fold_run([requested(), asked(delete_op(), python_op("op2", CODE))])
    assert result is not None and result.approval is not None
    assert result.approval.approval_id == "appr-t" and result.approval.expires_at == 99.0
    assert result.approval.operations[0].args == {"name": "Box"}
    assert result.approval.operations[1].args["code"] == CODE
    assert result.approval.code_sha256 == [code_sha256(CODE)]


def test_fold_when_event_predates_operations_takes_args_from_the_plan() -> None:
    plan = OperationSet(
        request_id="req-t",
        operations=[
            Operation(
                operation_id="op1",
                tool_name="object.delete",
                args={"name": "Old"},
                depends_on=[],
                safety_level="destructive",
            )
        ],
    )
    planned = Planned(
        event_id="plan",
        at=1.5,
        **RUN,
        scene_id="s",
        planner="rules",
        operation_set=plan,
        schedule=["op1"],
        catalog_version="v",
    )
    old = ApprovalRequested(
        event_id="ask", at=2.0, **RUN, approval_id="a", operation_ids=["op1"], reason="d"
    )
    result = fold_run([requested(), planned, old])
    assert result is not None and result.approval is not None
    assert [(op.tool, op.args) for op in result.approval.operations] == [
        ("object.delete", {"name": "Old"})
    ]


def test_fold_when_run_no_longer_waits_has_no_approval() -> None:
    ask = asked(delete_op())
    resolved = follow(
        ask, ApprovalResolved, 3.0, approval_id="appr-t", decision="reject", resolved_by="ana"
    )
    denied = follow(
        resolved,
        Denied,
        4.0,
        failure=failure("APPROVAL_REJECTED", "ana rejected op1", repair=[("op1", "drop")]),
        message="ana rejected op1",
        operation_ids=["op1"],
    )
    result = fold_run([requested(), ask, resolved, denied])
    assert result is not None and result.status == "failed" and result.approval is None
