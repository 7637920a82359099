"""What a plan may hold, checked where it enters and again by the planner (findings A, B, E).

Too many operations, numbers no float can hold, control characters in names and plans
nested too deep are refused with a message that names the limit or the argument, never
with a crash or a traceback.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from contracts.events import PlanRejected, RunFailed, RunRequested
from contracts.limits import (
    DEFAULT_MAX_OPERATIONS,
    MAX_DEPTH,
    LimitExceeded,
    RequestRefused,
    argument_problem,
    check_plan,
)
from services.doors.cli import main as cli
from services.doors.cli.common import EXIT_USAGE
from services.doors.core.requests import build_request
from services.planner.graph import PlanInvalid, validate
from services.runtime.service.settings import Settings, SettingsError
from tests.support.catalog_fixture import CATALOG
from tests.support.planners import planner, requested

HUGE_INT = int("9" * 400)


def create(op_id: str, **args: Any) -> dict[str, Any]:
    return {
        "operation_id": op_id,
        "tool_name": "object.create",
        "args": {"primitive": "cube", **args},
        "depends_on": [],
        "safety_level": "safe_write",
    }


def plan_of(count: int, **args: Any) -> dict[str, Any]:
    return {
        "request_id": "req-limits",
        "operations": [create(f"op{i}", **args) for i in range(count)],
    }


def nested(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


def rejected(raw: Any, **kw: Any) -> PlanInvalid:
    with pytest.raises(PlanInvalid) as info:
        validate(raw, CATALOG, **kw)
    return info.value


# -- settings --------------------------------------------------------------------------


def test_settings_when_unset_limits_are_the_defaults() -> None:
    s = Settings.from_env({})
    assert s.max_operations == DEFAULT_MAX_OPERATIONS == 500
    assert s.max_body_bytes == 1024 * 1024


def test_settings_when_set_reads_limits() -> None:
    s = Settings.from_env({"BLENDMESH_MAX_OPERATIONS": "20", "BLENDMESH_MAX_BODY_BYTES": "4096"})
    assert (s.max_operations, s.max_body_bytes) == (20, 4096)


@pytest.mark.parametrize("name", ["BLENDMESH_MAX_OPERATIONS", "BLENDMESH_MAX_BODY_BYTES"])
@pytest.mark.parametrize("value", ["0", "many"])
def test_settings_when_limit_bad_raises_naming_it(name: str, value: str) -> None:
    with pytest.raises(SettingsError, match=name):
        Settings.from_env({name: value})


# -- the planner's validation ----------------------------------------------------------


def test_validate_when_over_max_operations_rejects_naming_limit() -> None:
    exc = rejected(plan_of(DEFAULT_MAX_OPERATIONS + 1))
    assert exc.failure.error_code == "SCHEMA_INVALID" and exc.failure.recoverable
    assert "501 operations" in exc.message and "500" in exc.message
    assert "BLENDMESH_MAX_OPERATIONS" in exc.message
    assert "at most 500 operations" in exc.failure.retry_hint


def test_validate_when_at_max_operations_accepts() -> None:
    assert len(validate(plan_of(DEFAULT_MAX_OPERATIONS), CATALOG).schedule) == 500


def test_validate_when_limit_configured_uses_it() -> None:
    exc = rejected(plan_of(4), max_operations=3)
    assert "4 operations" in exc.message and "3" in exc.failure.retry_hint


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ({"location": [0, HUGE_INT, 0]}, "argument 'location[1]' is too large"),
        ({"location": [0, 0, math.inf]}, "argument 'location[2]' is not a finite number"),
        ({"location": [math.nan, 0, 0]}, "argument 'location[0]' is not a finite number"),
        ({"location": [0, -math.inf, 0]}, "argument 'location[1]' is not a finite number"),
        ({"name": "A\x00B"}, "argument 'name' contains a control character (U+0000)"),
        ({"name": "line\nbreak"}, "argument 'name' contains a control character (U+000A)"),
        ({"name": "bell\x7f"}, "argument 'name' contains a control character (U+007F)"),
    ],
)
def test_validate_when_argument_unusable_rejects_args_invalid_naming_it(
    args: dict[str, Any], named: str
) -> None:
    exc = rejected({"request_id": "r", "operations": [create("op1", **args)]})
    assert exc.failure.error_code == "ARGS_INVALID", exc.message
    assert named in exc.message and "op1" in exc.message
    assert "None is not of type" not in exc.message
    assert [(s.operation_id, s.action) for s in exc.failure.minimal_repair_plan] == [
        ("op1", "replace_args")
    ]


def test_validate_when_args_nested_too_deep_rejects_naming_depth() -> None:
    exc = rejected({"request_id": "r", "operations": [create("op1", extra=nested(MAX_DEPTH))]})
    assert exc.failure.error_code == "ARGS_INVALID"
    assert f"argument 'extra' is nested more than {MAX_DEPTH} levels" in exc.message


def test_validate_when_json_text_nested_thousands_deep_rejects_without_recursion_error() -> None:
    text = '{"request_id": "r", "operations": ' + "[" * 5000 + "]" * 5000 + "}"
    exc = rejected(text)
    assert exc.failure.error_code == "SCHEMA_INVALID" and "nested" in exc.message


async def test_planner_when_plan_holds_400_digit_int_fails_run_with_args_invalid() -> None:
    event = requested(
        plan={"request_id": "q1", "operations": [create("op1", location=[HUGE_INT, 0, 0])]}
    )
    handlers = planner()
    rejected_event, failed = await handlers.on_requested(event)
    assert isinstance(rejected_event, PlanRejected) and isinstance(failed, RunFailed)
    assert failed.failure.error_code == "ARGS_INVALID"
    assert "'location[0]'" in failed.message


async def test_planner_when_max_operations_set_rejects_larger_plans() -> None:
    event = RunRequested(
        event_id="e0",
        at=0.0,
        run_id="r1",
        request_id="q1",
        thread_id="t1",
        user="ana",
        scene_id="s1",
        plan=plan_of(3),
    )
    handlers = planner(max_operations=2)
    _, failed = await handlers.on_requested(event)
    assert isinstance(failed, RunFailed) and "3 operations" in failed.message


# -- the shared checks -----------------------------------------------------------------


def test_argument_problem_when_args_fine_is_none() -> None:
    args = {"name": "Box.001 ünïcode", "location": [1e6, -2, 0.5], "properties": {"count": 3}}
    assert argument_problem(args) is None


def test_argument_problem_when_key_has_control_character_names_it() -> None:
    problem = argument_problem({"properties": {"co\x00unt": 1}})
    assert problem is not None and "control character" in problem and "properties" in problem


def test_argument_problem_when_nested_deeper_than_limit_names_argument() -> None:
    problem = argument_problem({"x": nested(MAX_DEPTH + 5)})
    assert problem is not None and "'x" in problem and "levels" in problem


def test_check_plan_when_too_many_operations_raises_limit_exceeded() -> None:
    with pytest.raises(LimitExceeded, match=r"501 operations.*BLENDMESH_MAX_OPERATIONS"):
        check_plan(plan_of(501), DEFAULT_MAX_OPERATIONS)


def test_check_plan_when_not_a_dict_leaves_it_to_the_schema() -> None:
    check_plan(["not", "a", "plan"], DEFAULT_MAX_OPERATIONS)
    check_plan({"operations": "nope"}, DEFAULT_MAX_OPERATIONS)


# -- the doors: build_request (gateway and CLI) and `blendmesh run --plan` --------------


@pytest.mark.parametrize(
    ("plan", "named"),
    [
        (plan_of(1, location=[0, math.nan, 0]), "operation op0: argument 'location[1]'"),
        (plan_of(1, location=[0, 0, math.inf]), "argument 'location[2]' is not a finite number"),
        (plan_of(1, location=[HUGE_INT, 0, 0]), "argument 'location[0]' is too large"),
        (plan_of(1, name="Cu\x00be"), "argument 'name' contains a control character"),
        (plan_of(1, extra=nested(200)), "argument 'extra' is nested more than"),
    ],
)
def test_build_request_when_plan_unusable_refuses_naming_argument(plan: Any, named: str) -> None:
    with pytest.raises(RequestRefused) as info:
        build_request(user="ana", scene_id="s", plan=plan)
    assert named in str(info.value)
    assert not isinstance(info.value, LimitExceeded)


def test_build_request_when_too_many_operations_raises_limit_exceeded() -> None:
    with pytest.raises(LimitExceeded, match="BLENDMESH_MAX_OPERATIONS"):
        build_request(user="ana", scene_id="s", plan=plan_of(11), max_operations=10)


def test_build_request_when_event_too_large_raises_limit_exceeded() -> None:
    with pytest.raises(LimitExceeded, match="bytes"):
        build_request(user="ana", scene_id="s", prompt="add a cube " * 200_000)


def run_cli(tmp_path: Path, plan_text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    path = tmp_path / "plan.json"
    path.write_text(plan_text)
    code = cli.main(["--home", str(tmp_path / "var"), "run", "--plan", str(path)])
    return code, capsys.readouterr().err


def test_cli_when_plan_over_max_operations_exits_2_naming_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = run_cli(tmp_path, json.dumps(plan_of(501)), capsys)
    assert code == EXIT_USAGE
    assert "501 operations" in err and "BLENDMESH_MAX_OPERATIONS" in err
    assert not (tmp_path / "var").exists()  # refused before a mesh was started


def test_cli_when_plan_nested_5000_deep_exits_2_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = run_cli(tmp_path, "[" * 5000 + "]" * 5000, capsys)
    assert code == EXIT_USAGE
    assert "nested" in err and "Traceback" not in err and "RecursionError" not in err


@pytest.mark.parametrize(
    ("number", "named"), [("NaN", "not a finite number"), ("1e400", "not a finite number")]
)
def test_cli_when_plan_number_not_finite_exits_2_naming_argument(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], number: str, named: str
) -> None:
    text = json.dumps(plan_of(1, location=[0, 0, 0])).replace("[0, 0, 0]", f"[0, {number}, 0]")
    code, err = run_cli(tmp_path, text, capsys)
    assert code == EXIT_USAGE
    assert f"argument 'location[1]' is {named}" in err
