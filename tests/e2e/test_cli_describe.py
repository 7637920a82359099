"""``blendmesh run "describe the scene"`` answers with the scene, as a user runs it."""

from __future__ import annotations

from tests.e2e.test_cli import blendmesh
from tests.support.joined_mesh import Joined


def test_run_when_asked_to_describe_the_scene_prints_its_objects(joined: Joined) -> None:
    home, env, s1 = joined.home, joined.env(), joined.scene("s1")
    made = blendmesh(
        home, "run", "--scene", s1, "add a red metallic sphere named Ball at 0 0 2", env=env
    )
    assert made.returncode == 0, made.stderr
    proc = blendmesh(home, "run", "--scene", s1, "what is in the scene?", env=env)
    assert proc.returncode == 0, proc.stderr
    assert f"scene {s1}: 1 objects: 1 mesh" in proc.stdout
    assert "Ball [MESH] at (0, 0, 2)" in proc.stdout
    assert "materials:" in proc.stdout
