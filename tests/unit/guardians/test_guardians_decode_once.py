"""A judgement decodes its artifact once for all its guardians, and judges the same."""

from __future__ import annotations

import math
from pathlib import Path

import msgspec
import pytest

from contracts.inspection import FILE_NAME
from services.guardians.checks import artifact, transforms
from services.guardians.checks.artifact import decoded_once, load
from services.guardians.config import DEFAULT
from services.guardians.config import load as load_gates
from services.guardians.judge import judge
from tests.support.guardian_scenes import good_scene, write_repo


def test_load_when_inside_decoded_once_shares_one_decoded_artifact(tmp_path: Path) -> None:
    repo = write_repo(tmp_path / "a", good_scene())
    with decoded_once():
        assert load(repo) is load(repo)
    assert load(repo) is not load(repo)  # nothing outlives the block


def test_load_when_bytes_differ_decodes_its_own(tmp_path: Path) -> None:
    first = write_repo(tmp_path / "a", good_scene())
    other = msgspec.structs.replace(good_scene(), scene_id="other")
    second = write_repo(tmp_path / "b", other)
    with decoded_once():
        assert load(first).scene_id != load(second).scene_id == "other"
        assert load(first).scene_id == good_scene().scene_id


def test_load_when_file_changed_within_block_reads_the_change(tmp_path: Path) -> None:
    repo = write_repo(tmp_path / "a", good_scene())
    with decoded_once():
        load(repo)
        Path(repo, FILE_NAME).write_bytes(b"{not json")
        # a file that no longer decodes is never served from memory
        with pytest.raises(msgspec.DecodeError, match="JSON is malformed"):
            load(repo)


def test_load_when_artifact_missing_within_block_raises(tmp_path: Path) -> None:
    repo = write_repo(tmp_path / "a", good_scene())
    with decoded_once():
        load(repo)
        Path(repo, FILE_NAME).unlink()
        with pytest.raises(FileNotFoundError, match=FILE_NAME):
            load(repo)


def test_judge_when_every_gate_runs_passes_the_good_scene(tmp_path: Path) -> None:
    gates = load_gates(DEFAULT)
    data = artifact.read_file(write_repo(tmp_path / "a", good_scene()), FILE_NAME)
    result = judge(data, list(gates.guardians), gates.params, tmp_path / "work", "s-1")
    assert result["ok"] is True
    assert [g["output"]["passed"] for g in result["guardians"]] == [True] * len(gates.guardians)


@pytest.mark.parametrize("field", ["location", "rotation_euler", "scale", "dimensions"])
@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_sane_when_a_value_is_not_finite_sends_it_to_the_full_check(
    field: str, value: float
) -> None:
    assert transforms._sane(field, [0.5, value, 0.5]) is False


@pytest.mark.parametrize(
    ("field", "vector", "sane"),
    [
        ("scale", [1.0, -0.0, 1.0], False),
        ("scale", [-1.0, 1.0, 1.0], True),
        ("scale", [1.0, 1.0, transforms.MAX_SCALE], True),
        ("scale", [1.0, 1.0, -transforms.MAX_SCALE * 2], False),
        ("location", [transforms.MAX_LOCATION, 0.0, -transforms.MAX_LOCATION], True),
        ("location", [0.0, -transforms.MAX_LOCATION * 2, 0.0], False),
        ("dimensions", [1e30, 0.0, 0.0], True),
    ],
)
def test_sane_when_within_or_beyond_bounds_agrees_with_the_full_check(
    field: str, vector: list[float], sane: bool
) -> None:
    assert transforms._sane(field, vector) is sane
    assert all(transforms._problem(field, v) is None for v in vector) is sane
