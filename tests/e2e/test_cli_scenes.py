"""``blendmesh scenes``, ``revert`` and the exported-file guard of ``run``, as a user runs them.

A test whose command stops before any mesh starts runs on a home of its own; the others
join the ``blendmesh up`` the e2e tests share, each as a user of its own with scenes of its
own (tests/support/joined_mesh.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_cli import blendmesh
from tests.support.joined_mesh import Joined


def test_run_when_exported_file_put_there_by_hand_exits_2_offering_both_choices(
    tmp_path: Path,
) -> None:
    scenes = tmp_path / "scenes"
    scenes.mkdir()
    (scenes / "imported.blend").write_bytes(b"BLENDER-v500 made by an artist")
    proc = blendmesh(tmp_path, "run", "--scene", "imported", "describe the scene")
    assert proc.returncode == 2, proc.stderr
    assert "imported.blend" in proc.stderr
    assert "--adopt" in proc.stderr and "--discard" in proc.stderr
    assert (scenes / "imported.blend").read_bytes() == b"BLENDER-v500 made by an artist"
    assert not (tmp_path / "nats").exists()  # stopped before any mesh started


def test_scenes_import_when_file_is_not_a_blend_exits_2_naming_it(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not a scene")
    proc = blendmesh(tmp_path, "scenes", "import", str(notes), "--scene", "s1")
    assert proc.returncode == 2
    assert "notes.txt is not a .blend file" in proc.stderr
    assert not (tmp_path / "nats").exists()  # refused before any mesh started


def test_scenes_import_when_file_is_over_the_limit_exits_2_before_a_mesh(tmp_path: Path) -> None:
    big = tmp_path / "big.blend"
    big.write_bytes(b"BLENDER-v500" + b"\0" * 4096)
    limit = {"BLENDMESH_MAX_UPLOAD_BYTES": "1024"}
    proc = blendmesh(tmp_path, "scenes", "import", str(big), "--scene", "s1", env=limit)
    assert proc.returncode == 2, proc.stderr
    assert "big.blend holds 4108 bytes, more than the 1024" in proc.stderr
    assert not (tmp_path / "nats").exists()  # refused before any mesh started


def test_scenes_import_when_file_is_missing_exits_2(tmp_path: Path) -> None:
    proc = blendmesh(tmp_path, "scenes", "import", str(tmp_path / "gone.blend"), "--scene", "s1")
    assert proc.returncode == 2
    assert "cannot read" in proc.stderr


def test_revert_and_history_when_run_by_cli_ask_then_list_the_runs(joined: Joined) -> None:
    home, env, s = joined.home, joined.env(), joined.scene("s")
    assert (
        blendmesh(home, "run", "--scene", s, "add a cube named Box at 0 0 1", env=env).returncode
        == 0
    )
    assert (
        blendmesh(
            home, "run", "--scene", s, "add a uv sphere named Ball at 3 0 1", env=env
        ).returncode
        == 0
    )
    asked = blendmesh(home, "revert", s, "1", "--json", env=env)
    assert asked.returncode == 3, asked.stderr  # destructive: it waits for a person
    run_id = json.loads(asked.stdout)["run_id"]
    done = blendmesh(home, "approve", run_id, "--json", env=env)
    assert done.returncode == 0, done.stderr
    history = json.loads(blendmesh(home, "scenes", "history", s, "--json", env=env).stdout)
    assert [r["revision"] for r in history] == [1, 2, 3]
    assert history[2]["run_id"] == run_id and history[2]["tools"] == ["scene.revert"]
    table = blendmesh(home, "scenes", "history", s, env=env).stdout.splitlines()
    assert "add a uv sphere named Ball at 3 0 1" in next(line for line in table if " 2 " in line)
    assert "revert to revision 1" in next(line for line in table if run_id in line)
    runs = joined.own_rows(blendmesh(home, "runs", env=env).stdout)
    assert "revert to revision 1" in runs and "(plan as written)" not in runs
    assert "revert to revision 1" in blendmesh(home, "audit", run_id, env=env).stdout
    shown = blendmesh(home, "scenes", "show", s, env=env)
    assert shown.returncode == 0 and "Box [MESH]" in shown.stdout and "Ball" not in shown.stdout
    listed = json.loads(blendmesh(home, "scenes", "--json", env=env).stdout)
    assert [(r["scene_id"], r["revision"]) for r in listed] == [(s, 3)]
    table = blendmesh(home, "scenes", env=env).stdout
    assert run_id in next(line for line in table.splitlines() if line.startswith(f" {s} "))
    other = blendmesh(
        home, "scenes", "show", s, env=joined.env({"BLENDMESH_USER": joined.other_user})
    )
    assert other.returncode == 2 and f"no scene {s}" in other.stderr


def test_run_adopt_when_import_waits_runs_the_request_once_approved(joined: Joined) -> None:
    home, env = joined.home, joined.env()
    hand, other = joined.scene("hand"), joined.scene("other")
    assert blendmesh(home, "run", "--scene", hand, "add a cube named Box", env=env).returncode == 0
    assert (
        blendmesh(home, "run", "--scene", other, "add a cone named Cone", env=env).returncode == 0
    )
    scenes = home / "scenes"
    # Edited by hand, where the mesh keeps its scenes.
    (scenes / f"{hand}.blend").write_bytes((scenes / f"{other}.blend").read_bytes())
    asked = blendmesh(
        home, "run", "--scene", hand, "--adopt", "--json", "add a uv sphere named Ball", env=env
    )
    assert asked.returncode == 3, asked.stderr  # the import replaces the scene: a person decides
    import_id = json.loads(asked.stdout)["run_id"]
    assert f"your request runs once the import is approved: `blendmesh approve {import_id}`" in (
        asked.stderr
    )
    done = blendmesh(home, "approve", import_id, "--json", env=env)
    assert done.returncode == 0, done.stderr
    request_id = json.loads(done.stdout)["run_id"]
    assert request_id != import_id
    shown = blendmesh(home, "scenes", "show", hand, env=env).stdout
    assert "Cone [MESH]" in shown and "Ball [MESH]" in shown and "Box" not in shown
    history = json.loads(blendmesh(home, "scenes", "history", hand, "--json", env=env).stdout)
    assert [(r["run_id"], r["tools"][:1]) for r in history[1:]] == [
        (import_id, ["scene.import"]),
        (request_id, ["object.create"]),
    ]


def test_run_undo_when_scene_has_revisions_points_at_the_revert(joined: Joined) -> None:
    home, env, u = joined.home, joined.env(), joined.scene("u")
    assert blendmesh(home, "run", "--scene", u, "add a cube named Box", env=env).returncode == 0
    assert blendmesh(home, "run", "--scene", u, "add a cone named Cone", env=env).returncode == 0
    undo = blendmesh(home, "run", "--scene", u, "undo", env=env)
    assert undo.returncode == 1, undo.stderr
    assert "`blendmesh revert SCENE REVISION`" in undo.stdout  # the planner's refusal
    assert f"to undo the last run on {u}: `blendmesh revert {u} 1`" in undo.stderr
