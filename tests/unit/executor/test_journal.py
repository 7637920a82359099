"""Idempotency keys and resume decisions (spec 000 §Executor Guarantees 2)."""

from __future__ import annotations

from typing import Any

import pytest

from contracts.operations import Operation
from contracts.receipts import Receipt
from services.executor.domain.journal import (
    Conflict,
    JournalEntry,
    Resume,
    args_digest,
    op_key,
    plan_resume,
)


@pytest.mark.clause("000-§executor-guarantees.4")
def test_args_digest_when_keys_reordered_and_floats_equal_is_same() -> None:
    assert args_digest({"a": 1, "b": [0.1 + 0.2, -0.0]}) == args_digest({"b": [0.3, 0], "a": 1.0})


@pytest.mark.clause("000-§executor-guarantees.4")
def test_args_digest_when_values_differ_differs() -> None:
    assert args_digest({"a": 1}) != args_digest({"a": 1.000001})
    assert args_digest({"a": "1"}) != args_digest({"a": 1})


def test_args_digest_when_not_finite_raises() -> None:
    with pytest.raises(ValueError, match="non-finite"):
        args_digest({"a": float("inf")})


@pytest.mark.clause("000-§executor-guarantees.4")
def test_op_key_when_parts_would_concatenate_equal_differs() -> None:
    assert op_key("u", "s", "ab", "c") != op_key("u", "s", "a", "bc")


@pytest.mark.clause("000-§executor-guarantees.4")
def test_op_key_when_users_or_scenes_differ_differs() -> None:
    """Another user's request_id never collides with yours, on any scene."""
    assert op_key("ana", "s", "q1", "op1") != op_key("ben", "s", "q1", "op1")
    assert op_key("ana", "s1", "q1", "op1") != op_key("ana", "s2", "q1", "op1")


def op(op_id: str, args: dict[str, Any] | None = None) -> Operation:
    return Operation(
        operation_id=op_id,
        tool_name="object.transform",
        args=args or {},
        depends_on=[],
        safety_level="safe_write",
    )


def entry(op_id: str, before: str, after: str, args: dict[str, Any] | None = None) -> JournalEntry:
    receipt = Receipt(
        operation_id=op_id,
        tool_name="object.transform",
        safety_level="safe_write",
        status="succeeded",
        scene_hash_before=before,
        scene_hash_after=after,
    )
    return JournalEntry(
        request_id="q",
        operation_id=op_id,
        args_digest=args_digest(args or {}),
        run_id="r",
        receipt=receipt,
    )


OPS = {i: op(i) for i in ("a", "b", "c")}
SCHEDULE = ["a", "b", "c"]
ENTRIES = {"a": entry("a", "h0", "h1"), "b": entry("b", "h1", "h2")}


def test_resume_when_nothing_journaled_runs_everything() -> None:
    assert plan_resume(SCHEDULE, OPS, {}, "h0") == Resume()


@pytest.mark.clause("000-§executor-guarantees.5", "000-§executor-guarantees.6")
def test_resume_when_scene_has_journaled_ops_skips_them() -> None:
    resume = plan_resume(SCHEDULE, OPS, ENTRIES, "h2")
    assert isinstance(resume, Resume) and list(resume.done) == ["a", "b"] and resume.replay == []


def test_resume_when_scene_revision_was_not_committed_replays_journal() -> None:
    resume = plan_resume(SCHEDULE, OPS, ENTRIES, "h0")
    assert isinstance(resume, Resume) and resume.replay == ["a", "b"]


def test_resume_when_scene_is_midway_replays_the_rest() -> None:
    resume = plan_resume(SCHEDULE, OPS, ENTRIES, "h1")
    assert isinstance(resume, Resume) and resume.replay == ["b"]


@pytest.mark.clause("000-§executor-guarantees.7")
def test_resume_when_scene_changed_since_is_a_conflict() -> None:
    conflict = plan_resume(SCHEDULE, OPS, ENTRIES, "elsewhere")
    assert isinstance(conflict, Conflict) and conflict.operation_id == "b"
    assert "scene changed" in conflict.reason


@pytest.mark.clause("000-§executor-guarantees.7")
def test_resume_when_same_op_has_other_args_is_a_conflict() -> None:
    ops = {**OPS, "a": op("a", {"location": [1, 2, 3]})}
    conflict = plan_resume(SCHEDULE, ops, ENTRIES, "h2")
    assert isinstance(conflict, Conflict) and conflict.operation_id == "a"
    assert "other args" in conflict.reason


def test_resume_when_journal_has_a_gap_is_a_conflict() -> None:
    conflict = plan_resume(SCHEDULE, OPS, {"b": ENTRIES["b"]}, "h2")
    assert isinstance(conflict, Conflict)
