"""``blendmesh run "describe the scene"`` answers with the scene, as a user runs it."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.test_cli import blendmesh


def test_run_when_asked_to_describe_the_scene_prints_its_objects(tmp_path: Path) -> None:
    made = blendmesh(
        tmp_path, "run", "--scene", "s1", "add a red metallic sphere named Ball at 0 0 2"
    )
    assert made.returncode == 0, made.stderr
    proc = blendmesh(tmp_path, "run", "--scene", "s1", "what is in the scene?")
    assert proc.returncode == 0, proc.stderr
    assert "scene s1: 1 objects: 1 mesh" in proc.stdout
    assert "Ball [MESH] at (0, 0, 2)" in proc.stdout
    assert "materials:" in proc.stdout
