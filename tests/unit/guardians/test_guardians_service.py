"""The guardians service's handler: each committed revision judged, the verdict published."""

from __future__ import annotations

import json
import re
from pathlib import Path

import msgspec
import pytest

from contracts.events import Executed, GatesEvaluated, follow
from contracts.failures import failure
from contracts.inspection import encode
from services.guardians.config import DEFAULT, GatesConfig, load
from services.guardians.handlers import GuardiansHandlers
from services.runtime.service.settings import SettingsError
from tests.support.guardian_scenes import good_scene, scatter_group
from tests.unit.test_handlers import requested

NAME = "s1/00000001-h.inspection.json"


def executed(inspection: str | None = NAME, failed: bool = False) -> Executed:
    return follow(
        requested(),
        Executed,
        2.0,
        scene_id="s1",
        receipts=[],
        scene_hash="h",
        blend_path="/s1.blend",
        revision=1,
        inspection=inspection,
        failure=failure("TOOL_ERROR", "retry") if failed else None,
    )


def handlers(
    store: dict[str, bytes], tmp_path: Path, config: GatesConfig | None = None
) -> GuardiansHandlers:
    async def artifact(name: str) -> bytes | None:
        return store.get(name)

    return GuardiansHandlers(
        config=config or load(DEFAULT), artifact=artifact, work_dir=tmp_path, clock=lambda: 3.0
    )


async def test_guardians_when_revision_is_sound_publish_gates_passed(tmp_path: Path) -> None:
    (verdict,) = await handlers({NAME: encode(good_scene())}, tmp_path).on_executed(executed())
    assert isinstance(verdict, GatesEvaluated) and verdict.envelope.success, verdict.envelope
    assert verdict.guardians == list(load(DEFAULT).guardians)
    result = json.loads(verdict.result)
    assert result["tool"] == "run_guardians" and result["ok"] is True
    assert [g["guardian_id"] for g in result["guardians"]] == verdict.guardians
    assert verdict.config.startswith("blendmesh.v1.toml@sha256:")
    assert not (tmp_path / "s1-00000001").exists()  # the read-only folder is gone afterwards


async def test_guardians_when_gn_output_unlinked_fail_output_connected(tmp_path: Path) -> None:
    scene = good_scene()
    broken = msgspec.structs.replace(
        scene,
        node_groups=[
            scatter_group(connected=False) if g.name == "GN_Scatter" else g
            for g in scene.node_groups
        ],
    )
    (verdict,) = await handlers({NAME: encode(broken)}, tmp_path).on_executed(executed())
    assert not verdict.envelope.success
    assert "OUTPUT_CONNECTED" in verdict.envelope.failed_gates


async def test_guardians_when_artifact_missing_fail_closed(tmp_path: Path) -> None:
    (verdict,) = await handlers({}, tmp_path).on_executed(executed())
    assert not verdict.envelope.success and verdict.envelope.failed_gates == ["INSPECTION_MISSING"]


async def test_guardians_when_artifact_is_garbage_fail_closed(tmp_path: Path) -> None:
    (verdict,) = await handlers({NAME: b"not json"}, tmp_path).on_executed(executed())
    assert not verdict.envelope.success and "GUARDIAN_FAILED" in verdict.envelope.failed_gates


async def test_guardians_when_execution_failed_or_committed_nothing_stay_silent(
    tmp_path: Path,
) -> None:
    store = {NAME: encode(good_scene())}
    assert await handlers(store, tmp_path).on_executed(executed(failed=True)) == []
    assert await handlers(store, tmp_path).on_executed(executed(inspection=None)) == []


async def test_guardians_when_judging_again_publish_the_same_event(tmp_path: Path) -> None:
    store = {NAME: encode(good_scene())}
    (first,) = await handlers(store, tmp_path).on_executed(executed())
    (again,) = await handlers(store, tmp_path).on_executed(executed())
    assert first == again  # same id, same bytes: a redelivery is deduplicated


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[gates\n", "not valid TOML"),
        ("[other]\n", "needs a [gates] table"),
        ("[gates]\nguardians = []\n", "non-empty list"),
        ('[gates]\nguardians = ["no_such"]\n', "unknown guardians ['no_such']"),
    ],
)
def test_gates_file_when_bad_stops_the_start_naming_it(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "gates.toml"
    path.write_text(text)
    with pytest.raises(SettingsError, match=re.escape(message)) as caught:
        load(path)
    assert str(path) in str(caught.value)


def test_gates_file_when_missing_says_so(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="cannot read it"):
        load(tmp_path / "none.toml")


async def test_guardians_when_next_revision_judged_take_its_start_from_the_one_judged(
    tmp_path: Path,
) -> None:
    """The budget of revision 2 starts from revision 1's faces, counted when revision 1 was
    judged: its artifact is not read again."""
    second = "s1/00000002-i.inspection.json"
    store = {NAME: encode(good_scene()), second: encode(good_scene())}
    asked: list[tuple[str, int]] = []

    async def revision(scene: str, number: int) -> bytes | None:
        asked.append((scene, number))
        return None

    judging = handlers(store, tmp_path)
    judging.revision = revision
    await judging.on_executed(executed())
    later = msgspec.structs.replace(executed(second), revision=2)
    (verdict,) = await judging.on_executed(later)
    budget = next(g for g in json.loads(verdict.result)["guardians"]
                  if g["guardian_id"] == "polygon_budget")  # fmt: skip
    assert asked == [] and budget["output"]["faces_before"] == 519
