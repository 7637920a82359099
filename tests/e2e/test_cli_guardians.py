"""``blendmesh guardians SCENE``: what the guardians say of a committed revision, on demand,
on the ``blendmesh up`` the e2e tests share, each test as a user of its own."""

from __future__ import annotations

import json

from tests.e2e.test_cli import blendmesh
from tests.support.joined_mesh import Joined


def test_guardians_when_scene_committed_prints_verdict_and_json_on_ask(joined: Joined) -> None:
    home, env, scene = joined.home, joined.env(), joined.scene("judged")
    made = blendmesh(home, "run", "--json", "add a cube named Box", "--scene", scene, env=env)
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["gates"] == {"success": True, "failed_gates": [], "messages": []}
    said = blendmesh(home, "guardians", scene, env=env)
    assert said.returncode == 0, said.stderr
    assert said.stdout.startswith(f"scene {scene}: passed, ") and "output_connected" in said.stdout
    assert len(said.stdout.splitlines()) == 1 and "blendmesh-guardians-" not in said.stdout
    judged = blendmesh(home, "guardians", scene, "--json", env=env)
    assert judged.returncode == 0, judged.stderr
    result = json.loads(judged.stdout)
    assert result["tool"] == "run_guardians" and result["ok"] is True
    assert "output_connected" in [g["guardian_id"] for g in result["guardians"]]
    one = json.loads(
        blendmesh(
            home,
            "guardians",
            scene,
            "--revision",
            "1",
            "--guardian",
            "names_valid",
            "--json",
            env=env,
        ).stdout
    )
    assert [g["guardian_id"] for g in one["guardians"]] == ["names_valid"]


def test_guardians_when_scene_unknown_exits_2_saying_so(joined: Joined) -> None:
    never = joined.scene("never")
    proc = blendmesh(joined.home, "guardians", never, env=joined.env())
    assert proc.returncode == 2
    # As a scene of another user's is answered: nothing tells the two apart.
    assert f"no scene {never}; `blendmesh scenes` lists yours" in proc.stderr


def test_guardians_when_guardian_unknown_fails_closed_exit_1(joined: Joined) -> None:
    home, env, s = joined.home, joined.env(), joined.scene("s")
    assert blendmesh(home, "run", "add a cube named Box", "--scene", s, env=env).returncode == 0
    proc = blendmesh(home, "guardians", s, "--guardian", "no_such_guardian", "--json", env=env)
    assert proc.returncode == 1
    entry = json.loads(proc.stdout)["guardians"][0]
    assert entry["details"] == "fail-closed: guardian_unknown"
    said = blendmesh(home, "guardians", s, "--guardian", "no_such_guardian", env=env)
    assert said.returncode == 1
    assert said.stdout.splitlines() == [
        f"scene {s}: failed (GUARDIAN_FAILED), 1 guardians ran",
        "  guardian no_such_guardian failed closed: fail-closed: guardian_unknown",
    ]
