"""``blendmesh run`` on a running mesh, as a script runs it: NATS_URL set, output piped.

It must answer quickly (issue 24): the command joins the mesh and imports only what that
needs, never the embedded mesh, the executor's stores, rich or an SDK; and a pipe reads
its result as plain lines.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.joined_mesh import Joined
from tests.support.meshes import command_env
from tests.unit.doors.test_cli_imports import CHILD, ROOT, run_heavy_in


def test_run_when_joining_a_running_mesh_piped_loads_only_what_it_uses(
    tmp_path: Path, joined: Joined
) -> None:
    home, scene = joined.home, joined.scene("s")
    plan = tmp_path / "plan.json"
    create = {
        "operation_id": "m1",
        "tool_name": "object.create",
        "depends_on": [],
        "safety_level": "safe_write",
        "args": {"primitive": "cube", "name": "Box"},
    }
    plan.write_text(json.dumps({"request_id": "warm-1", "operations": [create]}))
    run = ["--home", str(home), "run", "--scene", scene, "--plan", str(plan)]
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *run],
        cwd=ROOT,
        env=command_env(joined.env()),
        capture_output=True,
        text=True,
        timeout=170,
        check=False,
    )
    said = json.loads(done.stderr.strip().splitlines()[-1])
    assert said["code"] == 0, done.stderr
    assert "nats" in said["modules"]  # it did join the mesh: the check below could fail
    assert run_heavy_in(said["modules"]) == []
    lines = done.stdout.splitlines()
    assert lines[1].split() == ["operation", "tool", "status", "ms", "scene", "hash"]
    assert lines[2].split()[:3] == ["m1", "object.create", "succeeded"]
    assert f"Saved scene {scene} to {home / 'scenes' / f'{scene}.blend'}" in done.stdout
    assert not any(mark in done.stdout for mark in "┃│━")  # no table rich drew
    assert "✓ m1 object.create" in done.stderr
