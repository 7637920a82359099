"""The retention policy's decisions: last N per scene, tags, the head, unplaced revisions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from services.executor.domain.retention import Retention, Stored, doomed

NOW = datetime(2026, 11, 24, 12, tzinfo=UTC)
OLD = (NOW - timedelta(hours=2)).isoformat()
NEW = (NOW - timedelta(minutes=1)).isoformat()


def rev(scene: str, n: int, at: str = OLD, suffix: str = "h") -> Stored:
    return Stored(scene, n, f"{scene}/{n:08d}-{suffix}", at)


def test_doomed_when_past_keep_removes_the_oldest_but_keeps_tags_and_head() -> None:
    stored = [rev("s", n) for n in range(1, 8)]
    gone = doomed(stored, {"s": (7, "s/00000007-h")}, {"s": {2}}, Retention(keep=3), NOW)
    assert [g.revision for g in gone] == [1, 3, 4]


def test_doomed_when_keep_is_one_keeps_only_the_head() -> None:
    stored = [rev("s", 1), rev("s", 2)]
    gone = doomed(stored, {"s": (2, "s/00000002-h")}, {}, Retention(keep=1), NOW)
    assert [g.revision for g in gone] == [1]


def test_doomed_when_newer_than_head_waits_for_the_grace() -> None:
    stored = [rev("s", 3, NEW), rev("s", 4, OLD), rev("s", 2)]
    gone = doomed(stored, {"s": (2, "s/00000002-h")}, {}, Retention(keep=1), NOW)
    assert [g.revision for g in gone] == [4]


def test_doomed_when_scene_has_no_head_removes_only_old_objects() -> None:
    stored = [rev("lost", 1, OLD), rev("fresh", 1, NEW), rev("odd", 1, "not a time")]
    assert doomed(stored, {}, {}, Retention(), NOW) == [stored[0]]


def test_retention_when_keep_is_zero_is_refused_with_the_fix() -> None:
    with pytest.raises(ValueError, match="keep at least 1"):
        Retention(keep=0)
