"""What a person reads before approving, at the CLI and in an MCP host, and what
``blendmesh audit`` says of who approved what."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from rich.console import Console

from contracts.events import ApprovalResolved, Approved, Planned, follow
from contracts.fold import fold_run
from contracts.operations import Operation, OperationSet
from contracts.python_steps import code_sha256
from contracts.queries import RunRow
from contracts.receipts import RunResult
from services.doors.cli import console as show
from services.doors.mcp import answers
from tests.support.trusted_runs import CODE, RUN, asked, delete_op, python_op, requested

SNEAKY = "x = 1\n# \u202e hidden\x1b[2J"


def printed(result: RunResult | None) -> str:
    assert result is not None
    out = Console(record=True, width=1000)
    show.print_result(out, result)
    return out.export_text()


def planned(args: dict[str, Any] | None = None) -> Planned:
    op = Operation(
        operation_id="op1",
        tool_name="object.delete",
        args=args or {"name": "Box"},
        depends_on=[],
        safety_level="destructive",
    )
    return Planned(
        event_id="plan",
        at=1.5,
        **RUN,
        scene_id="s",
        planner="rules",
        operation_set=OperationSet(request_id="req-t", operations=[op]),
        schedule=["op1"],
        catalog_version="v",
    )


def test_cli_prompt_when_destructive_shows_each_operations_arguments() -> None:
    result = fold_run([requested(), asked(delete_op())])
    text = printed(result)
    assert 'op1 object.delete (destructive) {"name": "Box"}' in text
    assert "approve: blendmesh approve run-t\n" in text
    assert "reject:  blendmesh reject run-t" in text
    assert "--code-sha256" not in text


def test_cli_prompt_when_trusted_python_shows_code_numbered_and_quotes_its_hash() -> None:
    result = fold_run([requested(), asked(delete_op(), python_op("op2", CODE))])
    text = printed(result)
    digest = code_sha256(CODE)
    assert f"trusted Python, {digest}:" in text
    assert "1 | import bpy\n" in text and "2 | bpy.ops.mesh.primitive_cube_add()" in text
    assert f"approve: blendmesh approve run-t --code-sha256 {digest}" in text
    op_line = next(line for line in text.splitlines() if "op2 python.trusted" in line)
    assert '"code":' not in op_line and digest in op_line  # code only as the block


def test_cli_prompt_when_code_hides_characters_shows_them_escaped() -> None:
    result = fold_run([requested(), asked(python_op("op1", SNEAKY))])
    text = printed(result)
    assert "2 | # \\u202e hidden\\u001b[2J" in text
    assert "\u202e" not in text and "\x1b" not in text


@pytest.mark.clause("002-§audit.5")
def test_audit_details_when_a_person_approved_names_them_and_the_arguments() -> None:
    ask = asked(delete_op())
    resolved = follow(
        ask, ApprovalResolved, 3.0, approval_id="appr-t", decision="approve_once", resolved_by="ana"
    )
    plan = planned()
    approved = follow(
        resolved,
        Approved,
        4.0,
        scene_id="s",
        operation_set=plan.operation_set,
        schedule=["op1"],
        approved_by="ana",
    )
    details = show.operation_details([requested(), plan, ask, resolved, approved])
    assert details == {"op1": {"args": '{"name":"Box"}', "approved_by": "ana"}}


def test_audit_details_when_rejected_says_who_rejected() -> None:
    ask = asked(delete_op())
    resolved = follow(
        ask, ApprovalResolved, 3.0, approval_id="appr-t", decision="reject", resolved_by="ben"
    )
    details = show.operation_details([requested(), planned(), ask, resolved])
    assert details["op1"]["approved_by"] == "rejected by ben"


def test_audit_details_when_arguments_are_long_cuts_them_to_the_limit() -> None:
    cell = show.operation_details([planned(args={"name": "B" * 1000})])["op1"]["args"]
    assert len(cell) == show.ARGS_SHOWN and cell.endswith("…")


def test_runs_rows_when_listed_show_request_and_time() -> None:
    row = RunRow(
        run_id="r",
        request_id="q",
        thread_id="t",
        user="ana",
        scene_id="s",
        prompt="add a cube named Box\nat 0 0 1 " + "x" * 100,
        state="completed",
        planner="rules",
        model=None,
        error_code=None,
        message=None,
        blend_path=None,
        scene_hash=None,
        created_at=0.0,
        updated_at=1.0,
    )
    shown = show.as_rows([row, msgspec.structs.replace(row, prompt=None)])
    assert shown[0]["created"] == "1970-01-01 00:00:00"
    assert shown[0]["request"].startswith("add a cube named Box at 0 0 1 x")
    assert len(shown[0]["request"]) == show.REQUEST_SHOWN
    assert shown[1]["request"] == "(plan as written)"


def test_mcp_question_when_trusted_python_shows_code_and_hash() -> None:
    pending = asked(delete_op(), python_op("op2", SNEAKY))
    question = answers.approval_question(pending)
    digest = code_sha256(SNEAKY)
    assert '- op1 object.delete (destructive) {"name":"Box"}' in question
    assert f"trusted Python, {digest}:" in question
    assert "  2 | # \\u202e hidden\\u001b[2J" in question
    assert "this code exactly as shown" in question
    out = answers.approval_out(pending)
    assert out["code_sha256"] == [digest]
    assert out["approve_command"] == f"blendmesh approve run-t --code-sha256 {digest}"
    json.dumps(out)  # structured content stays JSON


def test_mcp_question_when_nothing_trusted_keeps_the_plain_question() -> None:
    question = answers.approval_question(asked(delete_op()))
    assert "trusted Python" not in question
    assert question.endswith("Accept to run these operations once; decline to reject the run.")
