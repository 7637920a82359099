"""The thread each scene's ``blendmesh run`` continues: kept per user and scene in the
home, new on ``--new-thread``, bounded, and a damaged file only starts new threads."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.doors.cli import threads
from services.doors.cli.threads import FILE_NAME, scene_thread


def test_scene_thread_when_asked_again_is_the_same_and_differs_per_user_and_scene(
    tmp_path: Path,
) -> None:
    first = scene_thread(tmp_path, "ana", "room")
    assert first.startswith("thread-") and scene_thread(tmp_path, "ana", "room") == first
    assert scene_thread(tmp_path, "ana", "hall") != first
    assert scene_thread(tmp_path, "ben", "room") != first


def test_scene_thread_when_new_starts_over_and_keeps_the_new_one(tmp_path: Path) -> None:
    first = scene_thread(tmp_path, "ana", "room")
    fresh = scene_thread(tmp_path, "ana", "room", new=True)
    assert fresh != first and scene_thread(tmp_path, "ana", "room") == fresh


@pytest.mark.parametrize("damaged", ["{not json", "[1, 2]", '{"ana/room": 7}', ""])
def test_scene_thread_when_file_is_damaged_starts_a_thread(tmp_path: Path, damaged: str) -> None:
    (tmp_path / FILE_NAME).write_text(damaged)
    thread = scene_thread(tmp_path, "ana", "room")
    assert thread.startswith("thread-") and scene_thread(tmp_path, "ana", "room") == thread


def test_scene_thread_when_many_scenes_keeps_the_newest_within_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(threads, "MAX_ENTRIES", 3)
    made = [scene_thread(tmp_path, "ana", f"s{n}") for n in range(5)]
    assert scene_thread(tmp_path, "ana", "s4") == made[4]  # kept
    assert scene_thread(tmp_path, "ana", "s0") != made[0]  # dropped, so a new one
    assert len((tmp_path / FILE_NAME).read_text().split("thread-")) - 1 == 3


def test_scene_thread_when_home_cannot_be_written_still_gives_a_thread(tmp_path: Path) -> None:
    # A full or read-only disk must not fail the run: it goes on in a thread of its own.
    home = tmp_path / "home"
    home.write_text("a file where the home should be")
    thread = scene_thread(home, "ana", "room")
    assert thread.startswith("thread-") and scene_thread(home, "ana", "room") != thread
