"""``blendmesh runs rerun|fork|replay`` on a running mesh (issue 42, ADR 0063): a re-run
from operation N of a failed run completes and what the original committed is skipped as
idempotent; a fork with an edited plan builds its revision on the original's parent; a
bulk replay's dry run says what its real run then does; and what a caller may not do."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_cli import as_json, blendmesh
from tests.support.joined_mesh import Joined


def create(op_id: str, name: str, deps: list[str] | None = None) -> dict[str, Any]:
    return {"operation_id": op_id, "tool_name": "object.create",
            "args": {"primitive": "cube", "name": name}, "depends_on": deps or [],
            "safety_level": "safe_write"}  # fmt: skip


def move(op_id: str, name: str, deps: list[str]) -> dict[str, Any]:
    return {"operation_id": op_id, "tool_name": "object.transform",
            "args": {"name": name, "location": [1.0, 2.0, 3.0]}, "depends_on": deps,
            "safety_level": "safe_write"}  # fmt: skip


def plan_file(tmp: Path, name: str, request_id: str, *ops: dict[str, Any]) -> str:
    path = tmp / f"{name}.json"
    path.write_text(json.dumps({"request_id": request_id, "operations": list(ops)}))
    return str(path)


def statuses(result: dict[str, Any]) -> dict[str, str]:
    return {r["operation_id"]: r["status"] for r in result["receipts"]}


def shown(joined: Joined, run_id: str) -> dict[str, Any]:
    proc = blendmesh(joined.home, "runs", "show", "--json", run_id, env=joined.env())
    assert proc.returncode == 0, proc.stderr
    return as_json(proc)


def objects(joined: Joined, scene: str) -> str:
    proc = blendmesh(joined.home, "scenes", "show", scene, env=joined.env())
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.clause("000-§executor-guarantees.5", "000-§executor-guarantees.6")
def test_rerun_from_n_of_a_failed_run_completes_and_skips_what_was_committed(
    joined: Joined, tmp_path: Path
) -> None:
    home, env, scene = joined.home, joined.env(), joined.scene("s")
    ops = [create("a", "Here"), create("b", "There", ["a"]), move("c", "Ghost", ["b"]),
           move("d", "Here", ["c"])]  # fmt: skip
    first = plan_file(tmp_path, "first", f"req-{joined.tag}", *ops)
    failed = blendmesh(home, "run", "--json", "--scene", scene, "--plan", first, env=env)
    assert failed.returncode == 1, failed.stderr
    original = as_json(failed)
    assert statuses(original) == {"a": "succeeded", "b": "succeeded", "c": "rolled_back",
                                  "d": "skipped"}  # fmt: skip
    # The failed operation moved an object that is not there; the edit moves one that is.
    fixed = plan_file(tmp_path, "fixed", "ignored", *ops[:2], move("c", "There", ["b"]), ops[3])
    rerun = blendmesh(
        home, "runs", "rerun", original["run_id"], "--from", "3", "--plan", fixed, "--json",
        env=env,
    )  # fmt: skip
    assert rerun.returncode == 0, rerun.stderr
    result = as_json(rerun)
    assert result["status"] == "completed" and result["run_id"] != original["run_id"]
    assert statuses(result) == {"a": "skipped_idempotent", "b": "skipped_idempotent",
                                "c": "succeeded", "d": "succeeded"}  # fmt: skip
    assert result["request_id"] == original["request_id"]
    # The timeline links the re-run to its origin and shows the no-ops as such.
    account = shown(joined, result["run_id"])
    requested = account["timeline"][0]
    assert account["door"] == "cli" and account["origin"] == requested["facts"]["origin"]
    assert requested["facts"]["origin"] == {"run": original["run_id"], "kind": "rerun",
                                            "from_op": 3, "base_revision": None}  # fmt: skip
    assert f"rerun of {original['run_id']} from operation 3" in requested["detail"]
    assert {o["operation_id"]: o["status"] for o in account["operations"]}["a"] == (
        "skipped_idempotent"
    )
    table = blendmesh(home, "runs", "show", result["run_id"], env=env).stdout
    assert f"rerun of run {original['run_id']} from operation 3" in table
    assert "asked through cli" in table
    # Nothing committed twice: one Here and one There in the scene.
    scene_now = objects(joined, scene)
    assert scene_now.count("Here [MESH]") == 1 and scene_now.count("There [MESH]") == 1


def test_fork_with_an_edited_plan_builds_on_the_revision_the_run_started_from(
    joined: Joined, tmp_path: Path
) -> None:
    home, env, scene = joined.home, joined.env(), joined.scene("s")
    assert (
        blendmesh(home, "run", "--scene", scene, "add a cube named Base", env=env).returncode == 0
    )
    alpha = plan_file(tmp_path, "alpha", f"req-{joined.tag}", create("a", "Alpha"))
    done = blendmesh(home, "run", "--json", "--scene", scene, "--plan", alpha, env=env)
    assert done.returncode == 0, done.stderr
    original = as_json(done)
    later = blendmesh(home, "run", "--scene", scene, "add a cube named Later", env=env)
    assert later.returncode == 0, later.stderr
    history = json.loads(blendmesh(home, "scenes", "history", scene, "--json", env=env).stdout)
    assert [r["revision"] for r in history] == [1, 2, 3]
    # The scene moved on, so a re-run cannot continue where the run left it.
    refused = blendmesh(home, "runs", "rerun", original["run_id"], "--from", "1", env=env)
    assert refused.returncode == 2
    assert "moved on" in refused.stderr and f"runs fork {original['run_id']}" in refused.stderr
    beta = plan_file(tmp_path, "beta", "ignored", create("a", "Beta"))
    fork = blendmesh(
        home, "runs", "fork", original["run_id"], "--plan", beta, "--approve", "--json", env=env
    )
    assert fork.returncode == 0, fork.stderr
    result = as_json(fork)
    assert result["request_id"] != original["request_id"]
    assert statuses(result) == {"fork.base": "succeeded", "a": "succeeded"}
    base = next(r for r in result["receipts"] if r["operation_id"] == "fork.base")
    assert base["tool_name"] == "scene.revert"
    assert base["scene_hash_after"].startswith(history[0]["scene_hash_prefix"])
    after = json.loads(blendmesh(home, "scenes", "history", scene, "--json", env=env).stdout)
    assert after[-1]["revision"] == 4 and after[-1]["run_id"] == result["run_id"]
    scene_now = objects(joined, scene)
    assert "Base [MESH]" in scene_now and "Beta [MESH]" in scene_now
    assert "Alpha" not in scene_now and "Later" not in scene_now
    origin = shown(joined, result["run_id"])["timeline"][0]["facts"]["origin"]
    assert origin == {"run": original["run_id"], "kind": "fork", "from_op": 1,
                      "base_revision": 1}  # fmt: skip


def test_replay_dry_run_lists_what_the_real_replay_then_does(
    joined: Joined, tmp_path: Path
) -> None:
    home, env = joined.home, joined.env()
    since = str(time.time() - 1)
    one = plan_file(tmp_path, "one", f"req-{joined.tag}-1", create("a", "One"))
    completed = blendmesh(home, "run", "--json", "--scene", joined.scene("a"), "--plan", one,
                          env=env)  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    two = plan_file(tmp_path, "two", f"req-{joined.tag}-2", create("a", "Two"),
                    move("b", "Ghost", ["a"]))  # fmt: skip
    failed = blendmesh(home, "run", "--json", "--scene", joined.scene("b"), "--plan", two, env=env)
    assert failed.returncode == 1, failed.stderr
    until = str(time.time())
    window = ("--since", since, "--until", until)
    dry = blendmesh(home, "runs", "replay", *window, "--dry-run", "--json", env=env)
    assert dry.returncode == 0, dry.stderr
    planned = as_json(dry)
    assert planned["dry_run"] is True
    assert [r["run_id"] for r in planned["runs"]] == [
        as_json(completed)["run_id"],
        as_json(failed)["run_id"],
    ]
    verdicts = {r["run_id"]: {o["operation_id"]: o["verdict"] for o in r["operations"]}
                for r in planned["runs"]}  # fmt: skip
    assert verdicts[as_json(completed)["run_id"]] == {"a": "committed"}
    assert verdicts[as_json(failed)["run_id"]] == {"a": "committed", "b": "runs again"}
    real = blendmesh(home, "runs", "replay", *window, "--json", env=env)
    assert real.returncode == 1, real.stderr  # the failed run's Ghost is still not there
    replayed = as_json(real)
    assert replayed["dry_run"] is False
    for row in replayed["runs"]:
        for op in row["operations"]:
            expected = "skipped_idempotent" if op["verdict"] == "committed" else op["status"]
            assert op["status"] == expected and op["status"] is not None
        assert verdicts[row["run_id"]] == {
            o["operation_id"]: o["verdict"] for o in row["operations"]
        }
    by_run = {r["run_id"]: r for r in replayed["runs"]}
    assert by_run[as_json(completed)["run_id"]]["status"] == "completed"
    assert by_run[as_json(failed)["run_id"]]["status"] == "failed"
    # The filter: only the failed one, by status and by its error code.
    code = as_json(failed)["failure"]["error_code"]
    for args in (("--status", "failed"), ("--error-code", code)):
        only = blendmesh(home, "runs", "replay", *window, *args, "--dry-run", "--json", env=env)
        assert [r["run_id"] for r in as_json(only)["runs"]] == [as_json(failed)["run_id"]]


def test_steering_refuses_another_users_run_a_bad_n_a_bad_plan_and_a_cancelled_run(
    joined: Joined, tmp_path: Path
) -> None:
    home, env, scene = joined.home, joined.env(), joined.scene("s")
    done = blendmesh(home, "run", "--json", "--scene", scene, "add a cube named Mine", env=env)
    run_id = as_json(done)["run_id"]
    other = joined.env({"BLENDMESH_USER": joined.other_user})
    for args in (("rerun", run_id, "--from", "1"), ("fork", run_id)):
        proc = blendmesh(home, "runs", *args, env=other)
        assert proc.returncode == 2 and f"no run {run_id}" in proc.stderr, proc.stderr
    for n in ("0", "2", "99999"):
        proc = blendmesh(home, "runs", "rerun", run_id, "--from", n, env=env)
        assert proc.returncode == 2 and "has operations 1 to 1" in proc.stderr, proc.stderr
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"request_id": "r", "operations": [{"tool_name": "x"}]}))
    proc = blendmesh(home, "runs", "fork", run_id, "--plan", str(bad), env=env)
    assert proc.returncode == 2 and "not a valid operation set" in proc.stderr, proc.stderr
    proc = blendmesh(home, "runs", "rerun", "run.*", "--from", "1", env=env)
    assert proc.returncode == 2 and "run.*" in proc.stderr
    waiting = blendmesh(home, "run", "--json", "--scene", scene, "delete Mine", env=env)
    cancelled = as_json(waiting)["run_id"]
    assert blendmesh(home, "cancel", cancelled, env=env).returncode == 1
    for args in (("rerun", cancelled, "--from", "1"), ("fork", cancelled)):
        proc = blendmesh(home, "runs", *args, env=env)
        assert proc.returncode == 2 and "was cancelled" in proc.stderr, proc.stderr
    proc = blendmesh(home, "runs", "replay", "--limit", "51", "--dry-run", env=env)
    assert proc.returncode == 2 and "1 to 50 runs" in proc.stderr
    proc = blendmesh(home, "runs", "replay", "--since", "yesterday", env=env)
    assert proc.returncode == 2 and "--since 'yesterday' is not a time" in proc.stderr


def test_fork_from_n_of_a_failed_run_starts_from_the_revision_that_operation_met(
    joined: Joined, tmp_path: Path
) -> None:
    home, env, scene = joined.home, joined.env(), joined.scene("s")
    ops = [create("a", "Here"), move("b", "Ghost", ["a"]), move("c", "Here", ["b"])]
    first = plan_file(tmp_path, "first", f"req-{joined.tag}", *ops)
    failed = blendmesh(home, "run", "--json", "--scene", scene, "--plan", first, env=env)
    assert failed.returncode == 1, failed.stderr
    original = as_json(failed)
    later = blendmesh(home, "run", "--scene", scene, "add a cube named Later", env=env)
    assert later.returncode == 0, later.stderr
    history = json.loads(blendmesh(home, "scenes", "history", scene, "--json", env=env).stdout)
    assert [r["revision"] for r in history] == [1, 2]  # 1: Here, kept when b failed
    # Operation 2 met revision 1; the fork moves the object that is there instead.
    fixed = plan_file(tmp_path, "fixed", "ignored", move("b", "Here", []))
    fork = blendmesh(
        home, "runs", "fork", original["run_id"], "--from", "2", "--plan", fixed, "--approve",
        "--json", env=env,
    )  # fmt: skip
    assert fork.returncode == 0, fork.stderr
    result = as_json(fork)
    assert statuses(result) == {"fork.base": "succeeded", "b": "succeeded"}
    base = next(r for r in result["receipts"] if r["operation_id"] == "fork.base")
    assert base["scene_hash_after"].startswith(history[0]["scene_hash_prefix"])
    scene_now = objects(joined, scene)
    assert scene_now.count("Here [MESH]") == 1 and "Later" not in scene_now
    origin = shown(joined, result["run_id"])["origin"]
    assert origin == {"run": original["run_id"], "kind": "fork", "from_op": 2,
                      "base_revision": 1}  # fmt: skip
    # Operation 3 never ran, so no stored scene is known to be what it met.
    proc = blendmesh(home, "runs", "fork", original["run_id"], "--from", "3", env=env)
    assert proc.returncode == 2 and "no stored revision holds the scene operation 3" in proc.stderr
