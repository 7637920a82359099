"""``blendmesh runs show RUN``: a run's timeline on a running mesh (issue 42), for a run a
person approved, one whose operation failed and was rolled back, and one cancelled; and
what a caller who may not see a run hears."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.test_cli import as_json, blendmesh
from tests.support.joined_mesh import Joined


def timeline(joined: Joined, run_id: str) -> dict[str, Any]:
    shown = blendmesh(joined.home, "runs", "show", "--json", run_id, env=joined.env())
    assert shown.returncode == 0, shown.stderr
    return as_json(shown)


def kinds(account: dict[str, Any]) -> list[str]:
    return [e["type"] for e in account["timeline"]]


def versions_named(account: dict[str, Any], *stages: str) -> None:
    for stage in stages:
        found = account["versions"][stage]
        assert found is not None, stage
        assert all(found[k] for k in ("blendmesh_version", "catalog_version", "blender_version"))
    if len(stages) == 2:
        assert (
            account["versions"]["planned"]["catalog_version"]
            == (account["versions"]["executed"]["catalog_version"])
        )


def test_runs_show_when_a_person_approved_shows_decision_approver_receipts_revision(
    joined: Joined,
) -> None:
    home, env, scene = joined.home, joined.env(), joined.scene("s")
    assert blendmesh(home, "run", "--scene", scene, "add a cube named Old", env=env).returncode == 0
    waiting = blendmesh(home, "run", "--json", "--scene", scene, "delete Old", env=env)
    assert waiting.returncode == 3, waiting.stderr
    run_id = as_json(waiting)["run_id"]
    assert blendmesh(home, "approve", run_id, env=env).returncode == 0
    account = timeline(joined, run_id)
    assert account["run"]["state"] == "completed"
    assert kinds(account)[0] == "run.requested" and kinds(account)[-1] == "run.completed"
    for kind in ("run.approval_requested", "run.approval_resolved", "run.approved"):
        assert kind in kinds(account)
    assert [e["at"] for e in account["timeline"]] == sorted(e["at"] for e in account["timeline"])
    (op,) = account["operations"]
    assert op["tool"] == "object.delete" and op["args"] == {"name": "Old"}
    assert op["decision"] == "require_approval" and op["approved_by"] == joined.user
    assert op["status"] == "succeeded" and op["duration_ms"] > 0
    assert op["scene_hash_before"] and op["scene_hash_after"]
    assert op["scene_hash_before"] != op["scene_hash_after"]
    assert isinstance(account["revision"], int)
    assert account["gates"] and all(g["revision"] == account["revision"] for g in account["gates"])
    versions_named(account, "planned", "executed")
    # The same, for a person: the table names the approver and the versions.
    shown = blendmesh(home, "runs", "show", run_id, env=env)
    assert shown.returncode == 0, shown.stderr
    assert "object.delete" in shown.stdout and joined.user in shown.stdout
    assert "require_approval" in shown.stdout
    assert f"tool catalog {account['versions']['executed']['catalog_version']}" in shown.stdout
    assert f"revision made: {account['revision']}" in shown.stdout


def test_runs_show_when_an_operation_failed_shows_the_failure_and_the_rollback(
    joined: Joined,
) -> None:
    home, env, scene = joined.home, joined.env(), joined.scene("s")
    failed = blendmesh(
        home, "run", "--json", "--scene", scene, "add a cube named Here, then move Ghost to 1 2 3",
        env=env,
    )  # fmt: skip
    assert failed.returncode == 1, failed.stderr
    run_id = as_json(failed)["run_id"]
    account = timeline(joined, run_id)
    assert account["run"]["state"] == "failed" and account["run"]["error_code"]
    assert "run.op_failed" in kinds(account) and "run.op_rolled_back" in kinds(account)
    created, moved = account["operations"]
    assert created["status"] == "succeeded" and created["decision"] == "allow"
    assert created["approved_by"] == "policy"
    assert moved["args"]["name"] == "Ghost"
    assert moved["status"] == "rolled_back" and moved["rolled_back_by"]
    assert moved["error_code"]
    # Rolled back to where it started: what the operation met is what it left.
    assert moved["scene_hash_after"] == moved["scene_hash_before"]
    # The operation boundary keeps what succeeded before the failure: a revision with Here.
    assert isinstance(account["revision"], int)
    versions_named(account, "planned", "executed")


def test_runs_show_when_cancelled_shows_who_cancelled_and_nothing_executed(
    joined: Joined,
) -> None:
    home, env, scene = joined.home, joined.env(), joined.scene("s")
    assert (
        blendmesh(home, "run", "--scene", scene, "add a cube named Kept", env=env).returncode == 0
    )
    waiting = blendmesh(home, "run", "--json", "--scene", scene, "delete Kept", env=env)
    run_id = as_json(waiting)["run_id"]
    cancelled = blendmesh(home, "cancel", run_id, "--reason", "wrong shot", env=env)
    assert cancelled.returncode == 1, cancelled.stderr
    account = timeline(joined, run_id)
    assert account["run"]["state"] == "failed"
    assert account["run"]["error_code"] == "RUN_CANCELLED"
    (cancel,) = [e for e in account["timeline"] if e["type"] == "run.cancel_requested"]
    assert cancel["facts"] == {"cancelled_by": joined.user, "reason": "wrong shot"}
    assert kinds(account)[-1] == "run.failed"
    assert "run.executed" not in kinds(account) and account["revision"] is None
    (op,) = account["operations"]
    assert op["decision"] == "require_approval" and "status" not in op
    versions_named(account, "planned")
    assert account["versions"]["executed"] is None


@pytest.mark.parametrize("whose", ["unknown", "another user's"])
def test_runs_show_when_run_is_not_the_callers_answers_as_unknown(
    joined: Joined, whose: str
) -> None:
    home, scene = joined.home, joined.scene("s")
    run_id = "run-none"
    if whose == "another user's":
        done = blendmesh(home, "run", "--json", "--scene", scene, "add a cube", env=joined.env())
        run_id = as_json(done)["run_id"]
    other = joined.env({"BLENDMESH_USER": joined.other_user})
    for args in (("runs", "show", run_id), ("runs", "show", "--json", run_id)):
        proc = blendmesh(home, *args, env=other)
        assert proc.returncode == 2, proc.stdout
        assert f"no run {run_id}; `blendmesh runs` lists the runs" in proc.stderr
        assert proc.stdout == ""


def test_runs_show_when_id_is_not_one_token_refuses_it(joined: Joined) -> None:
    proc = blendmesh(joined.home, "runs", "show", "run.*", env=joined.env())
    assert proc.returncode == 2 and "run.*" in proc.stderr
    assert "`blendmesh runs` lists the runs" in proc.stderr
