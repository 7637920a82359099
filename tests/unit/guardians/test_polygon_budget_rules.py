"""The polygon budget judges what a run adds: the rules on artifacts, the per-scene budget
of a gates file, and the earlier revision the service compares with (docs/guardians.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
from msgspec.structs import replace

from contracts.inspection import RunOperation, encode
from services.guardians.baseline import KnownFaces, faces_before
from services.guardians.checks.budget import evaluated_faces, polygon_budget
from services.guardians.config import load, params_for
from services.guardians.judge import judge_counting
from services.runtime.service.settings import SettingsError
from tests.support.guardian_scenes import good_scene, write_repo

FACES = 519  # good_scene()'s evaluated faces


def judged(tmp_path: Path, gates: dict[str, Any], tools: tuple[str, ...] = ()) -> Any:
    scene = good_scene()
    if tools:
        assert scene.run is not None
        ops = [
            RunOperation(operation_id=f"o{i}", tool_name=t, safety_level="safe_write")
            for i, t in enumerate(tools)
        ]
        scene = replace(scene, run=replace(scene.run, operations=ops))
    return polygon_budget(write_repo(tmp_path, scene, msgspec.json.encode(gates)))


def test_budget_when_run_added_no_faces_to_an_over_budget_scene_passes(tmp_path: Path) -> None:
    said = judged(tmp_path, {"polygon_budget": 100, "faces_before": FACES})
    assert said["passed"] is True
    assert (said["faces"], said["budget"], said["faces_before"]) == (FACES, 100, FACES)


def test_budget_when_run_shrank_an_over_budget_scene_passes(tmp_path: Path) -> None:
    assert judged(tmp_path, {"polygon_budget": 100, "faces_before": 9000})["passed"] is True


def test_budget_when_run_grew_an_over_budget_scene_fails_naming_where_it_started(
    tmp_path: Path,
) -> None:
    said = judged(tmp_path, {"polygon_budget": 100, "faces_before": 200})
    assert said["passed"] is False
    assert (
        f"{FACES} faces (the run took it from 200), over the polygon budget of 100"
        in said["messages"][0]
    )


def test_budget_when_earlier_faces_unknown_judges_the_whole_scene(tmp_path: Path) -> None:
    said = judged(tmp_path, {"polygon_budget": 100})
    assert said["passed"] is False and "faces_before" not in said


@pytest.mark.parametrize("tool", ["scene.import", "scene.revert"])
def test_budget_when_revision_is_an_imported_or_reverted_file_passes_and_reports(
    tmp_path: Path, tool: str
) -> None:
    said = judged(tmp_path, {"polygon_budget": 100, "faces_before": 0}, (tool,))
    assert said["passed"] is True and said["faces"] == FACES


@pytest.mark.parametrize("tools", [("object.create",), ("scene.import", "object.create")])
def test_budget_when_run_did_more_than_take_a_file_judges_it(
    tmp_path: Path, tools: tuple[str, ...]
) -> None:
    said = judged(tmp_path, {"polygon_budget": 100, "faces_before": 0}, tools)
    assert said["passed"] is False


def test_gates_json_when_faces_before_is_negative_raises(tmp_path: Path) -> None:
    with pytest.raises(msgspec.ValidationError, match="faces_before"):
        judged(tmp_path, {"polygon_budget": 100, "faces_before": -1})


def gates_file(tmp_path: Path, extra: str) -> Path:
    path = tmp_path / "gates.toml"
    path.write_text(f'[gates]\nguardians = ["polygon_budget"]\npolygon_budget = 100\n{extra}')
    return path


def test_params_when_scene_has_its_own_budget_use_it_and_drop_the_table(tmp_path: Path) -> None:
    config = load(gates_file(tmp_path, "[gates.scene_polygon_budget]\nshot = 5000\n"))
    assert params_for(config, "shot", 7) == {"polygon_budget": 5000, "faces_before": 7}
    assert params_for(config, "other", None) == {"polygon_budget": 100}


@pytest.mark.parametrize(
    "table",
    [
        "scene_polygon_budget = 5\n",
        "[gates.scene_polygon_budget]\nshot = -1\n",
        "[gates.scene_polygon_budget]\nshot = true\n",
        '[gates.scene_polygon_budget]\nshot = "5000"\n',
    ],
)
def test_gates_file_when_scene_budget_is_not_faces_is_refused(tmp_path: Path, table: str) -> None:
    with pytest.raises(SettingsError, match="scene_polygon_budget"):
        load(gates_file(tmp_path, table))


def test_gates_file_when_too_many_scene_budgets_is_refused(tmp_path: Path) -> None:
    many = "".join(f"s{i} = 1\n" for i in range(10_001))
    with pytest.raises(SettingsError, match="at most 10000"):
        load(gates_file(tmp_path, "[gates.scene_polygon_budget]\n" + many))


async def test_faces_before_when_earlier_artifact_is_garbage_is_unknown() -> None:
    async def revision(scene: str, number: int) -> bytes | None:
        return b"not an artifact"

    assert await faces_before(revision, "s1", 2) is None


async def test_faces_before_when_first_revision_is_zero_and_asks_nothing() -> None:
    async def revision(scene: str, number: int) -> bytes | None:
        raise AssertionError("a first revision has nothing before it")

    assert await faces_before(revision, "s1", 1) == 0


async def test_faces_before_reads_the_revision_before() -> None:
    asked: list[tuple[str, int]] = []

    async def revision(scene: str, number: int) -> bytes | None:
        asked.append((scene, number))
        return encode(good_scene())

    assert await faces_before(revision, "s1", 5) == FACES and asked == [("s1", 4)]
    assert evaluated_faces(encode(good_scene())) == FACES


async def test_faces_before_when_revision_before_was_judged_here_reads_nothing() -> None:
    async def revision(scene: str, number: int) -> bytes | None:
        raise AssertionError("a revision judged here is not read again")

    known = KnownFaces()
    known.put("s1", 4, 77)
    assert await faces_before(revision, "s1", 5, known) == 77


async def test_faces_before_when_only_another_scene_or_revision_is_known_reads_it() -> None:
    asked: list[tuple[str, int]] = []

    async def revision(scene: str, number: int) -> bytes | None:
        asked.append((scene, number))
        return encode(good_scene())

    known = KnownFaces()
    known.put("s2", 4, 77)
    known.put("s1", 3, 66)
    assert await faces_before(revision, "s1", 5, known) == FACES and asked == [("s1", 4)]


def test_known_faces_when_over_its_limit_forgets_the_least_recently_used() -> None:
    known = KnownFaces(limit=2)
    known.put("s", 1, 10)
    known.put("s", 2, 20)
    assert known.get("s", 1) == 10  # 2 is now the least recent
    known.put("s", 3, 30)
    assert (known.get("s", 1), known.get("s", 2), known.get("s", 3)) == (10, None, 30)


def test_judge_counting_when_artifact_decodes_counts_its_faces(tmp_path: Path) -> None:
    found, faces = judge_counting(
        encode(good_scene()), ["polygon_budget"], {"polygon_budget": 100}, tmp_path, "s-1"
    )
    output = found["guardians"][0]["output"]
    assert faces == FACES and output["faces"] == FACES


def test_judge_counting_when_artifact_does_not_decode_counts_nothing(tmp_path: Path) -> None:
    found, faces = judge_counting(
        b"not an artifact", ["polygon_budget"], {"polygon_budget": 100}, tmp_path, "s-1"
    )
    assert faces is None and found["guardians"][0]["ok"] is False
