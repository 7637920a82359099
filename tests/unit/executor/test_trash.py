"""The trash: a discarded file is gone from where it was at once and deleted later by a
thread at the lowest priority, not by the caller (unless the trash is full), so a big
scene's file costs a commit a rename, not the 50-90 ms its deletion takes; and the work
directories of this host's executors that died are found to be thrown away, never a
live one's or another host's."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from services.executor.adapters import trash as trash_module
from services.executor.adapters.trash import NICE, Trash, stale_work_dirs


def made(path: Path, data: bytes = b"BLENDER") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_discard_takes_the_file_away_at_once_and_deletes_it_later(tmp_path: Path) -> None:
    trash = Trash(tmp_path / "trash")
    path = made(tmp_path / "work" / "s1-00000001.blend")
    trash.discard(path)
    assert not path.exists()
    trash.drain()
    assert list((tmp_path / "trash").iterdir()) == []
    trash.close()


def test_discard_when_the_file_is_gone_is_no_error(tmp_path: Path) -> None:
    trash = Trash(tmp_path / "trash")
    trash.discard(tmp_path / "never.blend")
    trash.drain()
    trash.close()


def test_discard_when_two_files_share_a_name_keeps_both_until_deleted(tmp_path: Path) -> None:
    trash = Trash(tmp_path / "trash")
    trash.close()  # nothing deletes: both must be in the trash, neither replacing the other
    trash.discard(made(tmp_path / "a" / "s1.blend", b"one"))
    trash.discard(made(tmp_path / "b" / "s1.blend", b"two"))
    held = sorted(p.read_bytes() for p in (tmp_path / "trash").iterdir())
    assert held == [b"one", b"two"]


def test_keep_holds_the_file_so_replacing_it_frees_nothing_until_drained(tmp_path: Path) -> None:
    trash = Trash(tmp_path / "trash")
    trash.close()  # nothing deletes meanwhile: the held link stays to be seen
    path = made(tmp_path / "scenes" / "s1.blend", b"old")
    old = path.stat().st_ino
    trash.keep(path)
    assert path.stat().st_nlink == 2
    os.replace(made(tmp_path / "scenes" / "new.blend", b"new"), path)
    assert path.read_bytes() == b"new"
    [held] = (tmp_path / "trash").iterdir()
    assert (held.stat().st_ino, held.read_bytes()) == (old, b"old")
    again = Trash(tmp_path / "trash")  # the next executor deletes what was left
    again.drain()
    assert list((tmp_path / "trash").iterdir()) == []
    again.close()


def test_a_new_trash_deletes_what_a_stopped_executor_left(tmp_path: Path) -> None:
    left = made(tmp_path / "trash" / "1a2b3c4d-0-s1.blend")
    trash = Trash(tmp_path / "trash")
    trash.drain()
    assert not left.exists()
    trash.close()


def test_discard_when_the_trash_is_full_deletes_in_the_caller(tmp_path: Path) -> None:
    trash = Trash(tmp_path / "trash", max_waiting=0)
    path = made(tmp_path / "s1.blend")
    trash.discard(path)
    assert not path.exists()
    assert list((tmp_path / "trash").iterdir()) == []  # not left for a thread
    trash.close()


def test_discard_when_the_trash_is_on_another_file_system_deletes_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trash = Trash(tmp_path / "trash")

    def across(src: Path, dst: Path) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(trash_module.os, "rename", across)
    path = made(tmp_path / "s1.blend")
    trash.discard(path)
    assert not path.exists()
    trash.close()


def test_the_thread_deletes_at_the_lowest_priority(tmp_path: Path) -> None:
    trash = Trash(tmp_path / "trash")
    trash.discard(made(tmp_path / "s1.blend"))
    trash.drain()  # it has deleted a file: it set its priority before
    native = trash._thread.native_id
    assert native is not None
    assert os.getpriority(os.PRIO_PROCESS, native) == NICE
    trash.close()


def test_discard_when_given_a_directory_deletes_it_and_all_in_it(tmp_path: Path) -> None:
    trash = Trash(tmp_path / "trash")
    folder = tmp_path / "work" / "box-41-abcdef"
    made(folder / "lane-1" / "revisions" / "s1-00000001.blend")
    trash.discard(folder)
    assert not folder.exists()
    trash.drain()
    assert list((tmp_path / "trash").iterdir()) == []
    trash.close()


def test_stale_work_dirs_are_this_hosts_executors_whose_process_is_gone(tmp_path: Path) -> None:
    for name in (
        "box-41-abcdef",  # this host, process gone
        "box-42-abcdef",  # this host, alive
        "my-box-43-0a1b2c",  # this host named with a dash, gone
        "other-41-abcdef",  # another host: only it can tell
        "box-41-notahex",  # not an executor's name
        "guardians",  # another service's folder
        "trash",
    ):
        (tmp_path / name).mkdir()
    made(tmp_path / "box-44-abcdef")  # a file of that name is no work directory
    alive = {42}.__contains__
    assert stale_work_dirs(tmp_path, "box", alive) == [tmp_path / "box-41-abcdef"]
    assert stale_work_dirs(tmp_path, "my-box", alive) == [tmp_path / "my-box-43-0a1b2c"]


def test_stale_work_dirs_never_names_this_process_or_a_missing_root(tmp_path: Path) -> None:
    ours = tmp_path / f"box-{os.getpid()}-abcdef"
    ours.mkdir()
    assert stale_work_dirs(tmp_path, "box") == []
    assert stale_work_dirs(tmp_path / "absent", "box") == []
