"""Where a Geometry Nodes response enters and where its steps show: the CLI's plan file
and receipt table, the HTTP body and answer, and the planner's settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from contracts.events import Planned, RunRequested, follow
from contracts.geonodes import convert_geonode_response
from contracts.limits import RequestRefused
from contracts.receipts import Receipt, RunResult
from services.doors.cli.commands import load_plan
from services.doors.cli.console import receipt_table
from services.doors.core.requests import build_request
from services.doors.gateway.schemas import RunBody, run_out
from services.planner.geonodes.compile import compile_response
from services.planner.settings import PlanLimits
from services.runtime.service.settings import SettingsError
from tests.support.geonode_fixture import GN_CATALOG, subdivide


def test_cli_plan_file_when_a_response_builds_a_request_with_a_fresh_request_id(
    tmp_path: Path,
) -> None:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(subdivide()))
    request = build_request(user="ana", scene_id="s", plan=load_plan(path), planner="plan")
    assert request.plan == subdivide() and request.request_id.startswith("req-")


def test_build_request_when_a_response_value_is_not_finite_is_refused() -> None:
    with pytest.raises(RequestRefused, match="step step_1"):
        build_request(user="ana", scene_id="s", plan=subdivide(level=float("inf")))


def test_http_body_when_plan_is_a_response_is_accepted() -> None:
    body = RunBody.model_validate({"plan": subdivide()})
    assert body.plan == subdivide()


def result(*receipts: Receipt) -> RunResult:
    return RunResult(
        run_id="r1",
        request_id="q1",
        thread_id="t1",
        scene_id="s",
        user="ana",
        status="completed",
        receipts=list(receipts),
    )


def receipt(op_id: str) -> Receipt:
    return Receipt(
        operation_id=op_id, tool_name="gn.add_node", safety_level="safe_write", status="succeeded"
    )


def rendered(run: RunResult) -> str:
    console = Console(width=160, record=True)
    console.print(receipt_table(run))
    return console.export_text()


def test_receipt_table_when_operations_come_from_steps_shows_a_step_column() -> None:
    text = rendered(result(receipt("step_1.01"), receipt("step_2.01")))
    header = next(line for line in text.splitlines() if "operation" in line)
    assert header.split()[1:3] == ["step", "┃"]  # the first column
    assert "│ step_2 │ step_2.01 │" in text


def test_receipt_table_when_plain_operations_has_no_step_column() -> None:
    assert "step" not in rendered(result(receipt("op01")))


def test_http_answer_when_operations_come_from_steps_names_each_step() -> None:
    ops = compile_response(convert_geonode_response(subdivide()), "q1", GN_CATALOG)
    requested = RunRequested(
        event_id="e0",
        at=0.0,
        run_id="r1",
        request_id="q1",
        thread_id="t1",
        user="ana",
        scene_id="s",
    )
    planned = follow(
        requested,
        Planned,
        1.0,
        scene_id="s",
        planner="plan",
        operation_set=ops,
        schedule=[op.operation_id for op in ops.operations],
        catalog_version="v",
    )
    answer = run_out(result(), [requested, planned])
    assert {a.step_id for a in answer.actions} == {"step_1"}
    assert answer.model_dump(by_alias=True)["actions"][0]["stepId"] == "step_1"


@pytest.mark.clause("004-§validation.6")
def test_plan_limits_when_python_chars_set_reads_them() -> None:
    limits = PlanLimits.from_env({"BLENDMESH_MAX_PYTHON_CHARS": "500"}, 40)
    assert (limits.max_operations, limits.max_python_chars) == (40, 500)
    assert PlanLimits.from_env({}, 500).max_python_chars == 20_000


@pytest.mark.parametrize("raw", ["0", "200001", "-1", "many"])
def test_plan_limits_when_python_chars_unusable_is_a_settings_error(raw: str) -> None:
    with pytest.raises(SettingsError, match="BLENDMESH_MAX_PYTHON_CHARS"):
        PlanLimits.from_env({"BLENDMESH_MAX_PYTHON_CHARS": raw}, 500)
