"""``blendmesh guardians SCENE``: what the guardians say of a committed revision, on demand."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_cli import blendmesh


def test_guardians_when_scene_committed_prints_verdict_and_json_on_ask(tmp_path: Path) -> None:
    made = blendmesh(tmp_path, "run", "--json", "add a cube named Box", "--scene", "judged")
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["gates"] == {"success": True, "failed_gates": [], "messages": []}
    said = blendmesh(tmp_path, "guardians", "judged")
    assert said.returncode == 0, said.stderr
    assert said.stdout.startswith("scene judged: passed, ") and "output_connected" in said.stdout
    assert len(said.stdout.splitlines()) == 1 and "blendmesh-guardians-" not in said.stdout
    judged = blendmesh(tmp_path, "guardians", "judged", "--json")
    assert judged.returncode == 0, judged.stderr
    result = json.loads(judged.stdout)
    assert result["tool"] == "run_guardians" and result["ok"] is True
    assert "output_connected" in [g["guardian_id"] for g in result["guardians"]]
    one = json.loads(
        blendmesh(
            tmp_path,
            "guardians",
            "judged",
            "--revision",
            "1",
            "--guardian",
            "names_valid",
            "--json",
        ).stdout
    )
    assert [g["guardian_id"] for g in one["guardians"]] == ["names_valid"]


def test_guardians_when_scene_unknown_exits_2_saying_so(tmp_path: Path) -> None:
    proc = blendmesh(tmp_path, "guardians", "never")
    assert proc.returncode == 2
    assert "scene never has no committed revision" in proc.stderr


def test_guardians_when_guardian_unknown_fails_closed_exit_1(tmp_path: Path) -> None:
    assert blendmesh(tmp_path, "run", "add a cube named Box", "--scene", "s").returncode == 0
    proc = blendmesh(tmp_path, "guardians", "s", "--guardian", "no_such_guardian", "--json")
    assert proc.returncode == 1
    entry = json.loads(proc.stdout)["guardians"][0]
    assert entry["details"] == "fail-closed: guardian_unknown"
    said = blendmesh(tmp_path, "guardians", "s", "--guardian", "no_such_guardian")
    assert said.returncode == 1
    assert said.stdout.splitlines() == [
        "scene s: failed (GUARDIAN_FAILED), 1 guardians ran",
        "  guardian no_such_guardian failed closed: fail-closed: guardian_unknown",
    ]
