"""The exported .blend a person opens, and how a door tells whether the person changed
it: by its bytes, hashed only when its size, inode or modification time say it may differ
from what blendmesh wrote (a 77 MiB shot took 0.1-0.3 s to hash before every run)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from services.executor.adapters import exports
from services.executor.adapters.exports import SceneExports


@pytest.fixture
def hashes(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Each file the check hashes, in order."""
    seen: list[Path] = []
    real = exports._sha256

    def counted(path: Path) -> str:
        seen.append(path)
        return real(path)

    monkeypatch.setattr(exports, "_sha256", counted)
    return seen


def published(tmp_path: Path, data: bytes = b"BLENDER-v500" + b"x" * 4096) -> SceneExports:
    files = SceneExports(tmp_path / "scenes")
    source = tmp_path / "saved.blend"
    source.write_bytes(data)
    files.export(source, "s1")
    record = files.root / ".s1.blend.sha256"
    after = record.stat().st_mtime_ns + 10**9  # the record written well after the file
    os.utime(record, ns=(after, after))
    return files


def test_changed_when_the_file_is_as_written_answers_none_without_hashing(
    tmp_path: Path, hashes: list[Path]
) -> None:
    files = published(tmp_path)
    hashes.clear()  # staging hashed it as it copied
    assert files.changed("s1") is None
    assert hashes == []


def test_changed_when_edited_in_place_to_the_same_size_hashes_and_names_the_file(
    tmp_path: Path, hashes: list[Path]
) -> None:
    files = published(tmp_path)
    path = files.path("s1")
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))  # same size, same inode, a newer mtime
    assert files.changed("s1") == path
    assert path in hashes


def test_changed_when_replaced_by_a_file_with_the_same_size_and_time_is_named(
    tmp_path: Path,
) -> None:
    files = published(tmp_path)
    path = files.path("s1")
    before = path.stat()
    other = path.with_name("other.blend")
    other.write_bytes(b"y" * before.st_size)
    os.utime(other, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(other, path)  # as Blender saves: a new file renamed over the old
    assert files.changed("s1") == path


def test_changed_when_written_in_the_records_own_tick_hashes_rather_than_trusts(
    tmp_path: Path, hashes: list[Path]
) -> None:
    files = published(tmp_path)
    path, record = files.path("s1"), files.root / ".s1.blend.sha256"
    tick = record.stat().st_mtime_ns
    os.utime(path, ns=(tick, tick))  # a coarse clock: file and record in one tick
    os.utime(record, ns=(tick, tick))
    hashes.clear()
    assert files.changed("s1") is None  # the bytes are blendmesh's
    assert hashes == [path]  # but only the hash could say so


def test_changed_when_the_record_is_of_an_older_release_falls_back_to_the_hash(
    tmp_path: Path, hashes: list[Path]
) -> None:
    files = published(tmp_path)
    record = files.root / ".s1.blend.sha256"
    record.write_text(record.read_text().splitlines()[0] + "\n")  # the digest alone
    hashes.clear()
    assert files.changed("s1") is None
    assert hashes == [files.path("s1")]


def test_keep_aside_when_the_file_was_changed_accepts_it_without_hashing_again(
    tmp_path: Path, hashes: list[Path]
) -> None:
    files = published(tmp_path)
    path = files.path("s1")
    path.write_bytes(b"changed by hand")
    assert files.changed("s1") == path
    backup = files.keep_aside("s1")
    assert backup.read_bytes() == b"changed by hand"
    record = files.root / ".s1.blend.sha256"
    later = record.stat().st_mtime_ns + 10**9
    os.utime(record, ns=(later, later))
    hashes.clear()
    assert files.changed("s1") is None
    assert hashes == []
