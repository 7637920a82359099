"""The exported .blend a person opens, and how a door tells whether the person changed
it: by its bytes, hashed only when its size, inode or modification time say it may differ
from what blendmesh wrote (a 77 MiB shot took 0.1-0.3 s to hash before every run)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from services.executor.adapters import exports
from services.executor.adapters.exports import SceneExports
from services.executor.adapters.trash import Trash


@pytest.fixture
def hashes(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Each file the check hashes, in order."""
    seen: list[Path] = []

    def counting(real: Callable[[Path], str]) -> Callable[[Path], str]:
        def counted(path: Path) -> str:
            seen.append(path)
            return real(path)

        return counted

    hashes = {scheme: counting(real) for scheme, real in exports.HASHES.items()}
    monkeypatch.setattr(exports, "HASHES", hashes)
    return seen


def published(tmp_path: Path, data: bytes = b"BLENDER-v500" + b"x" * 4096) -> SceneExports:
    files = SceneExports(tmp_path / "scenes")
    source = tmp_path / "saved.blend"
    source.write_bytes(data)
    files.export(source, "s1")
    record = files.root / ".s1.blend.written"
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
    path, record = files.path("s1"), files.root / ".s1.blend.written"
    tick = record.stat().st_mtime_ns
    os.utime(path, ns=(tick, tick))  # a coarse clock: file and record in one tick
    os.utime(record, ns=(tick, tick))
    hashes.clear()
    assert files.changed("s1") is None  # the bytes are blendmesh's
    assert hashes == [path]  # but only the hash could say so


def test_changed_when_the_record_has_no_stamp_falls_back_to_the_hash(
    tmp_path: Path, hashes: list[Path]
) -> None:
    files = published(tmp_path)
    record = files.root / ".s1.blend.written"
    record.write_text(record.read_text().splitlines()[0] + "\n")  # the digest alone
    hashes.clear()
    assert files.changed("s1") is None
    assert hashes == [files.path("s1")]


def older_release_record(files: SceneExports, stamp: bool = True) -> Path:
    """The record a release before BLAKE3 left: ``.s1.blend.sha256``, a bare SHA-256."""
    path = files.path("s1")
    files.root.joinpath(".s1.blend.written").unlink()
    legacy = files.root / ".s1.blend.sha256"
    st = path.stat()
    stamped = f"{st.st_size} {st.st_ino} {st.st_mtime_ns}\n" if stamp else ""
    legacy.write_text(f"{hashlib.sha256(path.read_bytes()).hexdigest()}\n{stamped}")
    return legacy


def test_changed_when_an_older_release_wrote_the_record_reads_its_sha256(
    tmp_path: Path, hashes: list[Path]
) -> None:
    files = published(tmp_path)
    older_release_record(files, stamp=False)
    hashes.clear()
    assert files.changed("s1") is None  # an upgrade asks nobody to adopt their own file
    assert hashes == [files.path("s1")]
    files.path("s1").write_bytes(b"changed by hand")
    assert files.changed("s1") == files.path("s1")


def test_publish_when_an_older_release_wrote_the_record_replaces_it(tmp_path: Path) -> None:
    files = published(tmp_path)
    legacy = older_release_record(files)
    source = tmp_path / "next.blend"
    source.write_bytes(b"BLENDER-v500 next")
    files.export(source, "s1")
    assert not legacy.exists()
    written = (files.root / ".s1.blend.written").read_text()
    assert written.startswith("blake3:")
    assert files.changed("s1") is None


def test_changed_when_the_record_names_an_unknown_hash_names_the_file(tmp_path: Path) -> None:
    files = published(tmp_path)
    record = files.root / ".s1.blend.written"
    digest = record.read_text().partition("\n")[0]
    record.write_text(f"md5:{digest.partition(':')[2]}\n")  # and no stamp: hashing decides
    assert files.changed("s1") == files.path("s1")


def test_publish_with_a_trash_replaces_the_file_without_freeing_the_old_one(
    tmp_path: Path,
) -> None:
    trash = Trash(tmp_path / "trash")
    files = SceneExports(tmp_path / "scenes", trash)
    first, second = tmp_path / "a.blend", tmp_path / "b.blend"
    first.write_bytes(b"BLENDER first")
    second.write_bytes(b"BLENDER second")
    files.export(first, "s1")
    old = files.path("s1").stat().st_ino
    trash.close(timeout=5)  # nothing deletes now: what the trash holds stays to be seen
    files.export(second, "s1")
    assert files.path("s1").read_bytes() == b"BLENDER second"
    held = list((tmp_path / "trash").iterdir())
    assert [p.stat().st_ino for p in held] == [old]
    assert held[0].read_bytes() == b"BLENDER first"


def test_keep_aside_when_the_file_was_changed_accepts_it_without_hashing_again(
    tmp_path: Path, hashes: list[Path]
) -> None:
    files = published(tmp_path)
    path = files.path("s1")
    path.write_bytes(b"changed by hand")
    assert files.changed("s1") == path
    backup = files.keep_aside("s1")
    assert backup.read_bytes() == b"changed by hand"
    record = files.root / ".s1.blend.written"
    later = record.stat().st_mtime_ns + 10**9
    os.utime(record, ns=(later, later))
    hashes.clear()
    assert files.changed("s1") is None
    assert hashes == []
