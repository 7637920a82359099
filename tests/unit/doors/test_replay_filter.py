"""What a bulk replay selects (ADR 0063), and the times a person writes for it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from contracts.queries import RunRow
from services.doors.cli.steer import when
from services.doors.core.client import ClientError
from services.doors.core.steer_client import ReplayFilter
from services.doors.core.steering import SteerInvalid


def row(state: str | None, at: float, code: str | None = None) -> RunRow:
    return RunRow(
        run_id="r", request_id="q", thread_id="t", user="ann", scene_id="s", prompt=None,
        state=state, planner=None, model=None, error_code=code, message=None,  # type: ignore[arg-type]
        blend_path=None, scene_hash=None, created_at=at, updated_at=at,
    )  # fmt: skip


def test_filter_when_runs_are_under_way_never_selects_them() -> None:
    everything = ReplayFilter()
    assert everything.selects(row("completed", 1)) and everything.selects(row("failed", 1))
    for state in ("executing", "awaiting_confirmation", "planning", None):
        assert not everything.selects(row(state, 1))


def test_filter_when_bounded_by_time_status_and_code_selects_only_those() -> None:
    chosen = ReplayFilter(since=10, until=20, status="failed", error_code="TOOL_FAILED")
    assert chosen.selects(row("failed", 10, "TOOL_FAILED"))
    assert chosen.selects(row("failed", 20, "TOOL_FAILED"))
    assert not chosen.selects(row("failed", 9.9, "TOOL_FAILED"))
    assert not chosen.selects(row("failed", 20.1, "TOOL_FAILED"))
    assert not chosen.selects(row("completed", 15, None))
    assert not chosen.selects(row("failed", 15, "GATES_FAILED"))


@pytest.mark.parametrize(
    ("chosen", "said"),
    [
        (ReplayFilter(limit=0), "1 to 50 runs"),
        (ReplayFilter(limit=51), "1 to 50 runs"),
        (ReplayFilter(since=2, until=1), "swap them"),
        (ReplayFilter(error_code="X" * 65), "1 to 64 characters"),
    ],
)
def test_filter_when_unbounded_or_backwards_is_refused(chosen: ReplayFilter, said: str) -> None:
    with pytest.raises(SteerInvalid, match=said):
        chosen.check()


def test_when_reads_seconds_and_iso_8601_and_refuses_words() -> None:
    assert when(None, "--since") is None
    assert when("1700000000.5", "--since") == 1700000000.5
    moment = datetime(2026, 12, 6, 14, 0, tzinfo=UTC)
    assert when("2026-12-06T14:00+00:00", "--until") == moment.timestamp()
    assert when("2026-12-06T14:00", "--until") == moment.timestamp()  # UTC, as runs shows
    assert when("2026-12-06T15:00+01:00", "--until") == moment.timestamp()
    with pytest.raises(ClientError, match="--until 'soon' is not a time"):
        when("soon", "--until")
