"""How many runs one user may have at once, judged from their active runs."""

from __future__ import annotations

import msgspec
import pytest

from contracts.queries import RunRow
from services.doors.core.fairness import FairnessSettingError
from services.doors.core.quota import SETTINGS, WAITING, RunQuota


def rows(under_way: int, waiting: int) -> list[RunRow]:
    states = ["executing"] * under_way + [WAITING] * waiting
    return [row(f"run-{i}", state) for i, state in enumerate(states)]


def row(run_id: str, state: str) -> RunRow:
    fields = dict.fromkeys(("scene_id", "prompt", "planner", "model", "error_code"))
    fields |= dict.fromkeys(("message", "blend_path", "scene_hash"))
    return msgspec.convert(
        {**fields, "run_id": run_id, "request_id": "r", "thread_id": "t", "user": "mallory",
         "state": state, "created_at": 0.0, "updated_at": 0.0},
        RunRow,
    )  # fmt: skip


def test_problem_when_under_both_limits_is_none() -> None:
    assert RunQuota(runs=5, waiting=2).problem(rows(3, 1)) is None


def test_problem_when_approvals_wait_at_the_limit_names_it_and_what_to_do() -> None:
    said = RunQuota(runs=50, waiting=2).problem(rows(0, 2))
    assert said is not None and "2 runs waiting for approval" in said
    assert SETTINGS["waiting"] in said and "approve or reject" in said


def test_problem_when_runs_under_way_reach_the_limit_names_it() -> None:
    said = RunQuota(runs=4, waiting=10).problem(rows(3, 1))
    assert said is not None and "4 runs under way" in said and SETTINGS["runs"] in said


@pytest.mark.parametrize("raw", ["0", "x", "-3"])
def test_from_env_when_a_setting_is_unusable_names_it(raw: str) -> None:
    with pytest.raises(FairnessSettingError, match=SETTINGS["waiting"]):
        RunQuota.from_env({SETTINGS["waiting"]: raw})


def test_from_env_reads_what_is_set() -> None:
    assert RunQuota.from_env({SETTINGS["runs"]: "7"}) == RunQuota(runs=7)
