"""Logins suspended for flooding: written whole, read back, ended by the clock."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.runtime.server import suspensions


def test_suspend_when_written_is_active_until_its_time(tmp_path: Path) -> None:
    path = tmp_path / suspensions.FILE_NAME
    until = suspensions.suspend(path, "mallory", 60, now=1000.0)
    assert until == 1060.0
    assert suspensions.active(path, 1059.0) == {"mallory": 1060.0}
    assert suspensions.active(path, 1060.0) == {}  # ended by the clock, no write needed


def test_suspend_when_already_suspended_keeps_the_later_end(tmp_path: Path) -> None:
    path = tmp_path / suspensions.FILE_NAME
    suspensions.suspend(path, "mallory", 600, now=1000.0)
    suspensions.suspend(path, "mallory", 60, now=1001.0)
    suspensions.suspend(path, "eve", 60, now=1001.0)
    assert suspensions.active(path, 1002.0) == {"mallory": 1600.0, "eve": 1061.0}


@pytest.mark.parametrize("text", ["not json", "[1, 2]", '{"mallory": "forever"}', '{"m": 1e999}'])
def test_active_when_the_file_is_damaged_keeps_nobody_out(tmp_path: Path, text: str) -> None:
    path = tmp_path / suspensions.FILE_NAME
    path.write_text(text)
    assert suspensions.active(path, 0.0) == {}


def test_active_when_there_is_no_file_is_empty(tmp_path: Path) -> None:
    assert suspensions.active(tmp_path / "none.json", 0.0) == {}


@pytest.mark.parametrize(("raw", "seconds"), [("", 60), ("0", 0), ("5", 5)])
def test_seconds_from_reads_the_setting(raw: str, seconds: int) -> None:
    assert suspensions.seconds_from({suspensions.SETTING: raw}) == seconds


def test_seconds_from_when_not_a_number_names_the_setting() -> None:
    with pytest.raises(ValueError, match=suspensions.SETTING):
        suspensions.seconds_from({suspensions.SETTING: "soon"})
