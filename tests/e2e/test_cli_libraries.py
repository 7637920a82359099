"""A studio's shot through the command line, as a user runs it on a shared ``blendmesh
up``: ``scenes import`` brings the libraries it links, ``libraries`` lists them,
``libraries update`` waits for a person, ``libraries publish`` makes the library's next
revision for the shot, and ``scenes download`` writes a folder Blender
opens with every link resolved (tests/support/joined_mesh.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tests.e2e.test_cli import blendmesh
from tests.support.joined_mesh import Joined
from tests.support.shot_files import HERO_X, make_shot, opened


def test_shot_when_imported_listed_updated_and_downloaded_by_cli_stays_linked(
    joined: Joined, tmp_path: Path
) -> None:
    home, env, shot = joined.home, joined.env(), joined.scene("shot")
    made = asyncio.run(make_shot(tmp_path / "artist"))
    done = blendmesh(home, "scenes", "import", str(made), "--scene", shot, "--json", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "completed"
    listed = json.loads(blendmesh(home, "libraries", "--json", env=env).stdout)
    assert sorted(row["library"] for row in listed) == ["characters", "props"]
    revision = max(row["revision"] for row in listed if row["library"] == "characters")

    asked = blendmesh(
        home, "libraries", "update", shot, "characters", str(revision), "--json", env=env
    )
    # The same revision again: it waits for a person all the same (destructive).
    assert asked.returncode == 3, asked.stderr
    run_id = json.loads(asked.stdout)["run_id"]
    assert blendmesh(home, "approve", run_id, "--json", env=env).returncode == 0
    # The artist saves the character again and publishes it, on purpose, for this shot.
    asyncio.run(make_shot(tmp_path / "again"))
    newer = tmp_path / "again" / "lib" / "Characters.blend"
    published = blendmesh(
        home, "libraries", "publish", shot, "characters", str(newer), "--approve", "--json",
        env=env,
    )  # fmt: skip
    assert published.returncode == 0, published.stderr
    relisted = json.loads(blendmesh(home, "libraries", "--json", env=env).stdout)
    newest = max(row["revision"] for row in relisted if row["library"] == "characters")
    assert newest == revision + 1

    down = blendmesh(home, "scenes", "download", shot, "--to", str(tmp_path / "d"), env=env)
    assert down.returncode == 0, down.stderr
    written = [Path(line) for line in down.stdout.split()]
    assert written[0].name == f"{shot}.blend"
    assert sorted(p.parent.name for p in written[1:]) == ["libraries", "libraries"]
    assert f"characters@{newest}.blend" in [p.name for p in written[1:]]
    found = asyncio.run(opened(written[0]))
    assert not any(missing for _, missing, _ in found["libraries"])
    assert next(o for o in found["objects"] if o[0] == "Hero" and o[2])[3] == HERO_X

    again = blendmesh(home, "scenes", "download", shot, "--to", str(tmp_path / "d"), env=env)
    assert again.returncode == 2 and "exists already" in again.stderr
    other = joined.env({"BLENDMESH_USER": joined.other_user})
    theirs = blendmesh(home, "scenes", "download", shot, "--to", str(tmp_path / "o"), env=other)
    assert theirs.returncode == 2 and f"no scene {shot}" in theirs.stderr
    bad = blendmesh(home, "libraries", "update", shot, "../characters", "1", env=env)
    assert bad.returncode == 2 and "names no library" in bad.stderr
