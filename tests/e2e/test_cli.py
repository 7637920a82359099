"""The ``blendmesh`` command as a user runs it: each command a fresh process.

A test that checks what a command's own embedded mesh does (starts, stops, leaves behind,
finds in its home) runs the command with nothing running before. The others join the
``blendmesh up`` the e2e tests share (tests/support/joined_mesh.py), as a person runs
command after command on a mesh left running, each test as a user of its own.
"""

from __future__ import annotations

import fcntl
import json
import re
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.joined_mesh import Joined
from tests.support.meshes import BLENDMESH, blendmesh_up, command_env

FLAGSHIP = (
    "add a cube named Box at 0 0 1, add a bevel modifier to Box, "
    "then add a uv sphere named Ball at 3 0 1"
)


def blendmesh(
    home: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [BLENDMESH, "--home", str(home), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=command_env({"BLENDMESH_USER": "ana", **(env or {})}),
        stdin=subprocess.DEVNULL,
    )


def as_json(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert proc.stdout.strip(), proc.stderr
    return json.loads(proc.stdout)


def assert_mesh_stopped(home: Path) -> None:
    """The mesh released its lock (so its nats-server is gone) and removed its info file."""
    assert not (home / "mesh.json").exists()
    with open(home / "mesh.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_run_json_when_flagship_request_prints_result_and_stops(tmp_path: Path) -> None:
    # Its own embedded mesh: the test is that the command starts and stops one.
    proc = blendmesh(tmp_path, "run", "--json", FLAGSHIP)
    assert proc.returncode == 0, proc.stderr
    result = as_json(proc)
    assert result["status"] == "completed" and result["failure"] is None
    assert {"run_id", "status", "receipts", "failure", "blend_path"} <= result.keys()
    for receipt in result["receipts"]:
        assert {
            "operation_id",
            "tool_name",
            "status",
            "scene_hash_before",
            "scene_hash_after",
        } <= receipt.keys()
    assert Path(result["blend_path"]) == tmp_path / "scenes" / "default.blend"
    assert Path(result["blend_path"]).exists()
    assert_mesh_stopped(tmp_path)


def test_run_when_table_output_shows_receipts_and_path(joined: Joined) -> None:
    demo = joined.scene("demo")
    proc = blendmesh(joined.home, "run", "--scene", demo, "add a cone named Tip", env=joined.env())
    assert proc.returncode == 0, proc.stderr
    assert "object.create" in proc.stdout and "succeeded" in proc.stdout
    assert str(joined.home / "scenes" / f"{demo}.blend") in proc.stdout
    assert "✓ op01 object.create" in proc.stderr


def test_run_plan_when_hand_written_runs_it(tmp_path: Path, joined: Joined) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {
                "request_id": "hand-1",
                "operations": [
                    {
                        "operation_id": "a",
                        "tool_name": "object.create",
                        "args": {"primitive": "plane"},
                        "depends_on": [],
                        "safety_level": "safe_write",
                    }
                ],
            }
        )
    )
    demo = joined.scene("demo")
    result = as_json(
        blendmesh(
            joined.home, "run", "--json", "--plan", str(plan), "--scene", demo, env=joined.env()
        )
    )
    assert result["status"] == "completed" and result["request_id"] == "hand-1"


@pytest.mark.slow
def test_destructive_run_when_approved_by_cli_completes(tmp_path: Path) -> None:
    # Its own embedded mesh for each command: the approval, given by a later command, finds
    # the waiting run in the event log an earlier command's mesh left in the home.
    assert blendmesh(tmp_path, "run", "add a cube named Old").returncode == 0
    waiting = blendmesh(tmp_path, "run", "--json", "delete Old")
    assert waiting.returncode == 3
    run_id = as_json(waiting)["run_id"]
    assert as_json(waiting)["status"] == "awaiting_confirmation"
    asked = as_json(waiting)["approval"]
    assert asked["operations"] == [
        {
            "operation_id": "op01",
            "tool": "object.delete",
            "safety_level": "destructive",
            "args": {"name": "Old"},
        }
    ]
    assert asked["request_hash"] and asked["code_sha256"] == []
    runs = blendmesh(tmp_path, "runs")
    assert run_id in runs.stdout and "awaiting_confirmation" in runs.stdout
    approved = blendmesh(tmp_path, "approve", "--json", run_id)
    assert approved.returncode == 0, approved.stderr
    assert as_json(approved)["status"] == "completed"
    again = blendmesh(tmp_path, "approve", run_id)
    assert again.returncode == 2 and "not awaiting approval" in again.stderr
    trail = blendmesh(tmp_path, "audit", run_id)
    assert trail.returncode == 0 and "object.delete" in trail.stdout
    assert "require_approval" in trail.stdout


def test_approval_when_waiting_shows_arguments_and_audit_names_who_approved(
    joined: Joined,
) -> None:
    home, env, scene = joined.home, joined.env(), joined.scene("s")
    assert blendmesh(home, "run", "--scene", scene, "add a cube named Old", env=env).returncode == 0
    waiting = blendmesh(home, "run", "--scene", scene, "delete Old", env=env)
    assert waiting.returncode == 3, waiting.stderr
    assert 'op01 object.delete (destructive) {"name": "Old"}' in waiting.stdout
    run_id = re.search(r"blendmesh approve (run-\S+)", waiting.stdout)
    assert run_id is not None, waiting.stdout
    assert blendmesh(home, "approve", run_id[1], env=env).returncode == 0
    runs = joined.own_rows(blendmesh(home, "runs", env=env).stdout)
    row = next(line for line in runs.splitlines() if run_id[1] in line)
    assert "delete Old" in row and re.search(r"20\d\d-\d\d-\d\d \d\d:\d\d:\d\d", row)
    assert "add a cube named Old" in runs
    trail = blendmesh(home, "audit", run_id[1], env=env)
    assert trail.returncode == 0, trail.stderr
    assert "delete Old" in trail.stdout
    action = next(line for line in trail.stdout.splitlines() if "object.delete" in line)
    assert '{"name":"Old"}' in action and f"│ {joined.user} " in action


def test_audit_when_run_unknown_exits_2_naming_it(joined: Joined) -> None:
    proc = blendmesh(joined.home, "audit", "run-none", env=joined.env())
    assert proc.returncode == 2
    assert "no run run-none; `blendmesh runs` lists the runs" in proc.stderr


def test_destructive_run_when_rejected_by_cli_fails(joined: Joined) -> None:
    home, env, scene = joined.home, joined.env(), joined.scene("s")
    blendmesh(home, "run", "--scene", scene, "add a cube named Keep", env=env)
    waiting = blendmesh(home, "run", "--scene", scene, "--json", "delete Keep", env=env)
    run_id = as_json(waiting)["run_id"]
    rejected = blendmesh(home, "reject", "--json", run_id, env=env)
    assert rejected.returncode == 1
    assert as_json(rejected)["failure"]["error_code"] == "APPROVAL_REJECTED"


def test_run_when_request_unreadable_exits_1_quoting_it(joined: Joined) -> None:
    request = "add a cube, then paint it like van gogh"
    proc = blendmesh(joined.home, "run", "--scene", joined.scene("s"), request, env=joined.env())
    assert proc.returncode == 1
    out = proc.stderr + proc.stdout
    assert 'I did not understand "it" in "paint it like van gogh"' in out  # the first word
    assert "#rrggbb" in out  # the forms of the verb it read: colours for "paint"
    assert "add a <primitive> [named <Name>]" not in out  # not the whole grammar


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run"], "give either a request"),
        (["run", "--scene", "../etc", "add a cube"], "scene id '../etc' is not valid"),
        (["run", "--plan", "missing.json"], "cannot read plan"),
        (["approve", "run-none"], "there is no run run-none"),
        (["audit", "run-none"], "no run run-none"),
    ],
)
def test_cli_when_input_is_bad_exits_nonzero_with_message(
    joined: Joined, args: list[str], message: str
) -> None:
    proc = blendmesh(joined.home, *args, env=joined.env())
    assert proc.returncode in (2, 4)
    assert message in proc.stderr


def test_run_when_another_mesh_holds_home_says_how_to_join(tmp_path: Path) -> None:
    # Its own home: the test holds that home's lock.
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "mesh.json").write_text(json.dumps({"url": "nats://127.0.0.1:4999"}))
    with open(tmp_path / "mesh.lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        proc = blendmesh(tmp_path, "run", "add a cube")
    assert proc.returncode == 4
    assert "NATS_URL=nats://127.0.0.1:4999" in proc.stderr


def test_audit_rebuild_when_run_replays_the_log(tmp_path: Path) -> None:
    # Its own embedded mesh: the rebuild counts every record of the mesh's audit store.
    blendmesh(tmp_path, "run", "add a cube named A, then move Nobody to 1 1 1")
    proc = blendmesh(tmp_path, "audit", "rebuild")
    assert proc.returncode == 0, proc.stderr
    assert "rebuilt the audit views" in proc.stdout and "audit_records 3" in proc.stdout


def test_up_when_running_serves_runs_from_nats_url(tmp_path: Path) -> None:
    # Its own ``blendmesh up``: the test stops it and checks what it leaves behind.
    with blendmesh_up(tmp_path / "mesh", "--port", "0") as up:
        url = up.nats_url
        client_home = tmp_path / "client"
        refused = blendmesh(client_home, "run", "add a cube named Nope", env={"NATS_URL": url})
        assert refused.returncode == 4
        assert "refused an anonymous client" in refused.stderr, refused.stderr
        assert "BLENDMESH_NATS_CREDENTIALS" in refused.stderr
        credentials = str(tmp_path / "mesh" / "nats-credentials.json")
        proc = blendmesh(
            client_home,
            "run",
            "--json",
            "add a torus named Ring",
            env={"NATS_URL": url, "BLENDMESH_NATS_CREDENTIALS": credentials},
        )
        assert proc.returncode == 0, proc.stderr
        assert as_json(proc)["blend_path"].startswith(str(tmp_path / "mesh"))
        assert not (client_home / "nats").exists()  # joined, did not start its own
    assert up.proc.returncode in (0, 130)
    assert_mesh_stopped(tmp_path / "mesh")


def test_up_when_sent_sigterm_stops_the_mesh_cleanly(tmp_path: Path) -> None:
    # Its own ``blendmesh up``: the test stops it.
    with blendmesh_up(tmp_path, "--port", "0") as up:
        assert (tmp_path / "mesh.json").exists()
        up.proc.send_signal(signal.SIGTERM)
        assert up.proc.wait(timeout=60) == 0
    assert_mesh_stopped(tmp_path)
    assert not (tmp_path / "audit.sqlite3-wal").exists()  # the audit store was closed


def test_it_in_a_second_run_with_its_own_mesh_is_what_the_first_run_made(tmp_path: Path) -> None:
    # Each command starts and stops its own mesh: the second planner heard nothing of the
    # first run, and finds it in the log the two share.
    made = blendmesh(tmp_path, "run", "add a cube named Keg")
    assert made.returncode == 0, made.stderr
    moved = blendmesh(tmp_path, "run", "--json", "move it up 1")
    assert moved.returncode == 0, moved.stderr + moved.stdout
    [receipt] = as_json(moved)["receipts"]
    assert receipt["tool_name"] == "object.transform", receipt
    assert receipt["result"]["name"] == "Keg" and receipt["result"]["location"][2] == 1.0
    assert_mesh_stopped(tmp_path)


def test_run_when_run_again_on_the_scene_continues_its_thread_until_new_thread(
    joined: Joined,
) -> None:
    home, env, scene = joined.home, joined.env(), joined.scene("thread")
    made = blendmesh(home, "run", "--scene", scene, "add a cube named Keg", env=env)
    assert made.returncode == 0, made.stderr
    assert "the next run on scene" in made.stderr and "--new-thread starts over" in made.stderr
    # Another process, the next command: "it" is the cube the last run made.
    moved = blendmesh(home, "run", "--scene", scene, "--json", "move it up 1", env=env)
    assert moved.returncode == 0, moved.stderr
    [receipt] = as_json(moved)["receipts"]
    assert receipt["tool_name"] == "object.transform", receipt
    assert receipt["result"]["name"] == "Keg" and receipt["result"]["location"][2] == 1.0
    fresh = blendmesh(home, "run", "--scene", scene, "--new-thread", "move it up 1", env=env)
    assert fresh.returncode == 1
    assert '"it" does not refer to a named object here' in fresh.stderr + fresh.stdout
