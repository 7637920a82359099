"""The rules of re-runs and forks (ADR 0063), on a run's events built by hand: what a
re-run from operation N keeps, what it refuses, and what a fork's plan starts with."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from contracts.events import Executed, Planned, RunCompleted, RunFailed, RunRequested
from contracts.failures import failure
from contracts.operations import Operation, OperationSet
from contracts.receipts import Receipt
from services.doors.core import steering
from services.doors.core.steering import FORK_BASE, Original, SteerInvalid, SteerRefused

IDS = {"run_id": "run-a", "request_id": "req-a", "thread_id": "th-a", "user": "ann"}


def op(op_id: str, name: str, deps: list[str] | None = None) -> Operation:
    return Operation(
        operation_id=op_id,
        tool_name="object.create",
        args={"kind": "cube", "name": name},
        depends_on=deps or [],
        safety_level="safe_write",
    )


OPS = [op("a", "A"), op("b", "B", ["a"]), op("c", "C", ["b"])]


def receipt(op_id: str, status: Any) -> Receipt:
    return Receipt(
        operation_id=op_id, tool_name="object.create", safety_level="safe_write", status=status
    )


def original(
    statuses: tuple[str, ...] = ("succeeded", "rolled_back", "skipped"),
    *,
    code: str | None = "TOOL_FAILED",
    revision: int | None = 4,
    committed: bool = True,
    planned: bool = True,
) -> Original:
    requested = RunRequested(event_id="e0", at=1.0, scene_id="s", plan={}, **IDS)
    plan = Planned(
        event_id="e1", at=2.0, scene_id="s", planner="plan", catalog_version="c1",
        operation_set=OperationSet(request_id="req-a", operations=OPS),
        schedule=["a", "b", "c"], **IDS,
    )  # fmt: skip
    executed = Executed(
        event_id="e2", at=3.0, scene_id="s", scene_hash="h",
        blend_path="/x.blend" if committed else None, revision=revision,
        receipts=[receipt(i, s) for i, s in zip("abc", statuses, strict=True)], **IDS,
    )  # fmt: skip
    ended: RunCompleted | RunFailed
    if code is None:
        ended = RunCompleted(event_id="e3", at=4.0, summary="ok", blend_path=None,
                             scene_hash=None, **IDS)  # fmt: skip
    else:
        ended = RunFailed(event_id="e3", at=4.0, failure=failure(code, "x"), message="x", **IDS)
    return Original(requested, plan if planned else None, executed, ended)


def test_rerun_when_failed_at_b_keeps_request_id_and_marks_a_committed() -> None:
    steered = steering.rerun(original(), 2, 4)
    assert steered.plan["request_id"] == "req-a"
    assert steered.verdicts == {"a": "committed", "b": "runs again", "c": "runs again"}
    assert steered.origin.run == "run-a" and steered.origin.from_op == 2
    assert steered.origin.kind == "rerun"


@pytest.mark.parametrize("from_op", [0, 4, -1, 10_001])
def test_rerun_when_n_is_out_of_range_names_the_range(from_op: int) -> None:
    with pytest.raises(SteerRefused, match="has operations 1 to 3"):
        steering.rerun(original(), from_op, 4)


def test_rerun_when_an_operation_before_n_was_not_committed_names_it() -> None:
    with pytest.raises(SteerRefused, match=r"operation 2 \(b\) of run run-a was not committed"):
        steering.rerun(original(), 3, 4)


def test_rerun_when_the_scene_moved_on_points_to_fork() -> None:
    with pytest.raises(SteerRefused, match=r"moved on since run run-a .* runs fork run-a"):
        steering.rerun(original(), 1, 5)


def test_rerun_when_edited_plan_changes_an_operation_before_n_refuses() -> None:
    edited = {
        "request_id": "x",
        "operations": [
            {"operation_id": "a", "tool_name": "object.create", "args": {"kind": "cube",
             "name": "Z"}, "depends_on": [], "safety_level": "safe_write"},
        ],
    }  # fmt: skip
    with pytest.raises(SteerRefused, match=r"changes operation 1 \(a\)"):
        steering.rerun(original(), 2, 4, edited)


def test_rerun_when_edited_plan_is_not_an_operation_set_says_why() -> None:
    with pytest.raises(SteerRefused, match="not a valid operation set"):
        steering.rerun(original(), 1, 4, {"operations": "all of them"})


def test_rerun_when_cancelled_or_unplanned_or_running_refuses() -> None:
    with pytest.raises(SteerRefused, match="was cancelled"):
        steering.rerun(original(code="RUN_CANCELLED"), 1, 4)
    with pytest.raises(SteerRefused, match="made no plan"):
        steering.rerun(original(planned=False), 1, 4)
    running = Original(original().requested, original().planned, None, None)
    with pytest.raises(SteerRefused, match="has not ended"):
        steering.rerun(running, 1, 4)


def test_rerun_of_a_completed_run_marks_every_operation_committed() -> None:
    done = original(("succeeded",) * 3, code=None)
    assert set(steering.rerun(done, 3, 4).verdicts.values()) == {"committed"}


def test_rerun_when_nothing_was_committed_marks_every_operation_to_run_again() -> None:
    kept_nothing = original(committed=False)
    steered = steering.rerun(kept_nothing, 1, 4)
    assert set(steered.verdicts.values()) == {"runs again"}


def test_fork_reverts_to_the_parent_first_under_a_new_request_id() -> None:
    steered = steering.fork(original(("succeeded",) * 3, code=None), 3, "req-new")
    first, *rest = steered.plan["operations"]
    assert first["operation_id"] == FORK_BASE and first["tool_name"] == "scene.revert"
    assert first["args"] == {"revision": 3} and first["safety_level"] == "destructive"
    assert rest[0]["depends_on"] == [FORK_BASE] and rest[1]["depends_on"] == ["a"]
    assert steered.plan["request_id"] == "req-new"
    assert steered.origin.kind == "fork" and steered.origin.base_revision == 3


def test_fork_when_no_parent_revision_or_cancelled_refuses() -> None:
    with pytest.raises(SteerRefused, match="no stored revision"):
        steering.fork(original(), None, "req-new")
    with pytest.raises(SteerRefused, match="was cancelled"):
        steering.fork(original(code="RUN_CANCELLED"), 3, "req-new")


def test_fork_when_plan_takes_the_revert_id_refuses() -> None:
    plan = {"request_id": "x", "operations": [
        {"operation_id": FORK_BASE, "tool_name": "object.create", "args": {},
         "depends_on": [], "safety_level": "safe_write"}]}  # fmt: skip
    with pytest.raises(SteerRefused, match="rename that operation"):
        steering.fork(original(), 3, "req-new", plan)


def test_rerun_when_edited_plan_changes_a_committed_operation_after_n_points_to_fork() -> None:
    done = original(("succeeded",) * 3, code=None)
    edited = {"request_id": "x", "operations": [
        {"operation_id": i, "tool_name": "object.create", "args": {"kind": "cube", "name": n},
         "depends_on": d, "safety_level": "safe_write"}
        for i, n, d in (("a", "A", []), ("b", "B", ["a"]), ("c", "Other", ["b"]))]}  # fmt: skip
    with pytest.raises(SteerRefused, match=r"changes operation 3 \(c\), which run run-a committed"):
        steering.rerun(done, 2, 4, edited)


def hashed(
    statuses: tuple[str, ...], befores: tuple[str | None, ...], code: str | None
) -> Original:
    """``original`` whose receipts name the scene each operation met."""
    base = original(statuses, code=code)
    assert base.executed is not None
    receipts = [
        msgspec.structs.replace(r, scene_hash_before=h)
        for r, h in zip(base.executed.receipts, befores, strict=True)
    ]
    executed = msgspec.structs.replace(base.executed, receipts=receipts)
    return Original(base.requested, base.planned, executed, base.ended)


def test_parent_revision_is_the_newest_stored_scene_the_operation_met() -> None:
    failed_at_b = hashed(("succeeded", "rolled_back", "skipped"), ("h1", "h2", None), "X")
    history = [(1, "h1"), (2, "h9"), (3, "h2"), (4, "h2"), (5, "h1")]
    assert steering.parent_revision(failed_at_b, history) == 1  # 5 is past what it left (4)
    assert steering.parent_revision(failed_at_b, history, 2) == 4
    assert steering.parent_revision(failed_at_b, history, 3) is None  # c never ran
    assert steering.parent_revision(failed_at_b, [(1, "h9")], 1) is None


def test_fork_from_n_keeps_the_operations_from_n_on_its_parent() -> None:
    steered = steering.fork(original(), 4, "req-new", from_op=2)
    ids = [o["operation_id"] for o in steered.plan["operations"]]
    assert ids == [FORK_BASE, "b", "c"]
    # b's dependency on a is in the parent revision already.
    assert steered.plan["operations"][1]["depends_on"] == [FORK_BASE]
    assert steered.plan["operations"][2]["depends_on"] == ["b"]
    assert steered.origin.from_op == 2 and steered.origin.base_revision == 4


def test_fork_from_n_when_no_revision_holds_what_it_met_or_n_is_out_of_range_refuses() -> None:
    with pytest.raises(SteerRefused, match="no stored revision holds the scene operation 2"):
        steering.fork(original(), None, "req-new", from_op=2)
    with pytest.raises(SteerInvalid, match="has operations 1 to 3"):
        steering.fork(original(), 4, "req-new", from_op=4)
