"""The libraries beside a shot (services/bridge/blendfiles/shelf.py): which links they satisfy, and
the bounds on how many there are and how much they hold, checked by the files' sizes
before a byte of them is read. The links Blender would follow are tested against a real
bridge in tests/security/test_linked_libraries_hostile.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from contracts import libraries
from contracts.libraries import MAX_LIBRARIES, MAX_LIBRARIES_TOTAL_BYTES, MAX_LIBRARY_BYTES
from services.bridge.blendfiles.shelf import Shelf


def test_shelf_when_libraries_are_too_many_or_too_large_names_the_bound(tmp_path: Path) -> None:
    shelf_dir = tmp_path / "libraries"
    shelf_dir.mkdir()
    many = Shelf(str(tmp_path))
    for n in range(MAX_LIBRARIES + 1):
        (shelf_dir / f"prop{n}@1.blend").write_bytes(b"BLENDER")
        assert many.accepts(f"//libraries/prop{n}@1.blend")
    assert f"more than the {MAX_LIBRARIES} a shot may" in many.problems()[0]

    large = Shelf(str(tmp_path))
    with (shelf_dir / "huge@1.blend").open("wb") as sparse:  # sparse: no disk is used
        sparse.truncate(MAX_LIBRARY_BYTES + 1)
    assert large.accepts("//libraries/huge@1.blend")
    assert f"more than {MAX_LIBRARY_BYTES}" in large.problems()[0]

    bomb = Shelf(str(tmp_path))
    for n in range(MAX_LIBRARIES_TOTAL_BYTES // MAX_LIBRARY_BYTES + 1):
        with (shelf_dir / f"big{n}@1.blend").open("wb") as sparse:
            sparse.truncate(MAX_LIBRARY_BYTES)
        assert bomb.accepts(f"//libraries/big{n}@1.blend")
    assert f"more than the {MAX_LIBRARIES_TOTAL_BYTES}" in bomb.problems()[0]
    assert not Shelf(str(tmp_path)).accepts("//libraries/missing@1.blend")


@pytest.mark.parametrize(
    "path",
    [
        "//libraries/../x@1.blend",
        "/libraries/x@1.blend",
        "//libraries/x@0.blend",
        "//libraries/x@1.blend ",
        "//libraries/X@1.blend",
        "//libraries/x@123456789.blend",
        "//libraries//x@1.blend",
        "//libraries/x@1.blend\x00",
    ],
)
def test_parse_link_when_path_is_not_the_stored_form_is_none(path: str) -> None:
    assert libraries.parse_link(path) is None


def test_shelf_when_a_link_names_a_symlink_or_folder_does_not_accept_it(tmp_path: Path) -> None:
    shelf_dir = tmp_path / "libraries"
    shelf_dir.mkdir()
    (shelf_dir / "dir@1.blend").mkdir()
    os.symlink("/etc/hostname", shelf_dir / "link@1.blend")
    shelf = Shelf(str(tmp_path))
    assert not shelf.accepts("//libraries/dir@1.blend")
    assert not shelf.accepts("//libraries/link@1.blend")
    assert shelf.used == {}


def test_name_for_when_file_name_is_odd_keeps_a_safe_name() -> None:
    assert libraries.name_for("../Hero Rig v2.blend") == "hero-rig-v2"
    assert libraries.name_for("C:\\lib\\Set.BLEND") == "set"
    assert libraries.name_for("....blend") == ""
    assert libraries.is_name(libraries.name_for("x" * 200))


def test_libraries_problem_when_argument_is_hostile_names_what_is_wrong() -> None:
    blob = {"blob": "sha256:" + "0" * 64, "bytes": 10}
    assert libraries.libraries_problem({"props": blob}) is None
    assert "library names" in (libraries.libraries_problem({"../etc": blob}) or "")
    assert "library names" in (libraries.libraries_problem(["props"]) or "")
    assert "library names" in (
        libraries.libraries_problem({"props": {**blob, "bytes": True}}) or ""
    )
    too_many = {f"p{n}": blob for n in range(MAX_LIBRARIES + 1)}
    assert f"at most {MAX_LIBRARIES}" in (libraries.libraries_problem(too_many) or "")
    huge = {"props": {**blob, "bytes": MAX_LIBRARY_BYTES + 1}}
    assert "a library holds 1 to" in (libraries.libraries_problem(huge) or "")
    count = MAX_LIBRARIES_TOTAL_BYTES // MAX_LIBRARY_BYTES + 1
    total = {f"p{n}": {**blob, "bytes": MAX_LIBRARY_BYTES} for n in range(count)}
    assert "together" in (libraries.libraries_problem(total) or "")


def test_project_of_when_owner_has_dots_or_at_signs_keeps_users_apart() -> None:
    assert libraries.project_of("ana") == "personal-ana"
    assert libraries.project_of("ana.b@studio+x") == "personal-ana=2Eb=40studio=2Bx"
    for bad in ("", "ana/evil", "ana evil", "ana=2E", "x" * 129):
        with pytest.raises(ValueError, match="is not a user name"):
            libraries.project_of(bad)


BLOB = "sha256:" + "a" * 64


@pytest.mark.parametrize(
    "args",
    [
        {"name": "../characters", "revision": 1},
        {"name": "characters", "revision": 0},
        {"name": "characters", "revision": True},
        {"name": "characters", "revision": "2"},
        {"name": "characters", "revision": 1, "blob": BLOB, "bytes": 10},  # both forms
        {"name": "characters", "blob": "/etc/passwd", "bytes": 10},
        {"name": "characters", "blob": BLOB, "bytes": 0},
        {"name": "characters", "blob": BLOB, "bytes": MAX_LIBRARY_BYTES + 1},
        {"name": "characters", "blob": BLOB},
        {"name": 7, "revision": 1},
        ["characters", 1],
    ],
)
def test_update_problem_when_arguments_are_hostile_says_both_forms(args: object) -> None:
    said = libraries.update_problem(args)
    assert said is not None and '"revision"' in said and '"blob"' in said


def test_update_problem_when_a_revision_or_a_staged_file_is_named_accepts_it() -> None:
    assert libraries.update_problem({"name": "characters", "revision": 2}) is None
    staged = {"name": "characters", "blob": BLOB, "bytes": MAX_LIBRARY_BYTES}
    assert libraries.update_problem(staged) is None
    plan = libraries.publish_plan("req-1", "characters", BLOB, 10)
    [op] = plan["operations"]
    assert op["safety_level"] == "destructive" and op["args"] == {
        "name": "characters", "blob": BLOB, "bytes": 10,
    }  # fmt: skip
