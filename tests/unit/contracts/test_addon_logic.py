"""The add-on's logic that needs no Blender: what the panel shows of an approval, when a
pull must stop, the worker's error path and the client's own checks.
(The add-on in a real Blender: tests/integration/test_addon_bpy.py.)"""

from __future__ import annotations

import threading
import time

import pytest

from blendmesh_addon import blendheader
from blendmesh_addon.gateway import Gateway, GatewayError, check_scene_id
from blendmesh_addon.session import (
    MAX_CHANGE_LINES,
    Session,
    Synced,
    approval_lines,
    run_words,
    shown_changes,
    undo_label,
    unreplayable,
)
from blendmesh_addon.worker import MAX_QUEUED, Worker

CODE = "import bpy\n# \u202e looks harmless\nbpy.ops.wm.quit_blender()"


def trusted_approval() -> dict[str, object]:
    return {
        "approvalId": "appr-1",
        "runId": "run-1",
        "requestHash": "h",
        "reason": "destructive",
        "operations": [
            {
                "tool": "python.trusted",
                "safetyLevel": "destructive",
                "args": {"code": CODE, "code_sha256": "sha256:ab", "timeout_ms": 4000},
            },
            {"tool": "object.delete", "safetyLevel": "destructive", "args": {"name": "Box"}},
        ],
        "codeSha256": ["sha256:ab"],
    }


def test_approval_lines_when_trusted_python_waits_show_code_escaped_under_its_hash() -> None:
    lines = approval_lines(trusted_approval())
    assert lines == [
        ("reason", "destructive"),
        ("operation", "python.trusted [destructive] timeout_ms=4000"),
        ("hash", "code sha256:ab"),
        ("code", "  1 | import bpy"),
        ("code", "  2 | # \\u202e looks harmless"),
        ("code", "  3 | bpy.ops.wm.quit_blender()"),
        ("operation", "object.delete [destructive] name='Box'"),
    ]


def test_local_changes_when_never_synced_or_other_scene_or_other_digest_count_as_changed() -> None:
    session = Session()
    assert session.local_changes("room", "sha256:a")
    session.synced = Synced("room", 2, "sha256:a")
    assert not session.local_changes("room", "sha256:a")
    assert session.local_changes("room", "sha256:b")
    assert session.local_changes("hall", "sha256:a")


def test_followed_when_runs_of_other_scenes_listed_keeps_only_this_scenes() -> None:
    session = Session(synced=Synced("room", 2, "d"))
    history = [{"revision": n} for n in (1, 2, 3, 4)]
    runs = [{"runId": "r1", "sceneId": "room"}, {"runId": "r2", "sceneId": "hall"}]
    approvals = [{"runId": "r1"}, {"runId": "r2"}]
    session.followed("room", history, runs, approvals)
    assert [r["revision"] for r in session.newer] == [3, 4]
    assert session.others == [runs[0]] and session.approvals == [approvals[0]]


def test_ran_when_run_failed_shows_its_error_code() -> None:
    session = Session(busy="asking")
    session.ran({"status": "failed", "summary": "rejected", "failure": {"errorCode": "X_Y"}}, "s")
    assert session.busy == "" and session.error == "Failed (X_Y): rejected"


def drained(worker: Worker, results: list[object]) -> None:
    deadline = time.monotonic() + 10
    while not results and time.monotonic() < deadline:
        worker.drain()
        time.sleep(0.01)


def test_worker_when_a_job_raises_reports_a_message_not_a_traceback() -> None:
    worker, results = Worker(), []

    def job(progress: object) -> None:
        raise GatewayError("the gateway said no")

    worker.submit(job, results.append, results.append, results.append)
    drained(worker, results)
    assert results == ["the gateway said no"] and worker.idle


def test_worker_when_a_job_fails_unexpectedly_names_the_error_type() -> None:
    worker, results = Worker(), []
    worker.submit(lambda p: 1 / 0, results.append, results.append, results.append)
    drained(worker, results)
    assert results == ["ZeroDivisionError: division by zero"]


def test_worker_when_too_many_jobs_wait_refuses_more_with_a_reason() -> None:
    worker, refused = Worker(), []
    gate = threading.Event()
    for _ in range(MAX_QUEUED + 1):  # one runs, the rest fill the queue
        worker.submit(lambda p: gate.wait(10), lambda v: None, refused.append, lambda v: None)
    worker.submit(lambda p: None, lambda v: None, refused.append, lambda v: None)
    gate.set()
    assert refused and "too many requests" in refused[0]


@pytest.mark.parametrize(
    ("url", "token", "named"),
    [
        ("ftp://host", "t", "is not http(s)://host:port"),
        ("localhost:8000", "t", "is not http(s)://host:port"),
        ("http://127.0.0.1:8000", "  ", "no token is set"),
    ],
)
def test_gateway_when_settings_are_unusable_says_what_to_set(
    url: str, token: str, named: str
) -> None:
    with pytest.raises(GatewayError, match="preferences") as caught:
        Gateway(url, token)
    assert named in str(caught.value)


@pytest.mark.parametrize("scene", ["", "a/b", "x" * 129, "room\n"])
def test_scene_id_when_not_an_id_is_refused_naming_the_rule(scene: str) -> None:
    with pytest.raises(GatewayError, match="1-128 letters"):
        check_scene_id(scene)


def test_shown_when_a_follow_brings_nothing_new_is_unchanged_so_nothing_redraws() -> None:
    session = Session()
    runs = [{"runId": "r1", "sceneId": "s", "request": "add a cube"}]
    session.followed("s", [{"revision": 1}], runs, [])
    before = session.shown()
    session.followed("s", [{"revision": 1}], [dict(r) for r in runs], [])  # the same, anew
    assert session.shown() == before
    session.followed("s", [{"revision": 1}, {"revision": 2}], runs, [])
    assert session.shown() != before


def test_reached_when_the_gateway_answers_again_clears_only_its_unreachable_error() -> None:
    session = Session()
    session.failed("cannot reach the blendmesh gateway at http://x (refused): start it")
    session.reached()
    assert session.error == ""
    session.failed("the gateway at http://x refused the token (bad token): put your token")
    session.reached()  # answered the token typed since
    assert session.error == ""
    session.failed("the open file is 80.0 MiB, more than the 64.0 MiB the gateway takes")
    session.reached()
    assert session.error.startswith("the open file")


def test_failed_when_token_refused_forgets_the_user_at_once() -> None:
    session = Session(user="ana")
    session.failed("cannot reach the blendmesh gateway at http://x (refused): start it")
    assert session.user == "ana"  # unreachable says nothing about who the token is
    session.failed("the gateway at http://x refused the token (bad token): put your token")
    assert session.user == "" and session.busy == ""


def test_follow_failed_when_token_refused_forgets_the_user_and_names_the_refusal() -> None:
    session = Session(user="ana")
    session.follow_failed("the gateway at http://x refused the token (bad token): put yours")
    assert session.user == "" and "refused the token" in session.error
    session.follow_failed("cannot reach the blendmesh gateway at http://x (refused)")
    assert "refused the token" in session.error  # the error on show stays


def test_follow_failed_when_scene_not_pushed_yet_shows_no_error() -> None:
    session = Session(user="ana")
    session.follow_failed("scene gui not found (HTTP 404)")
    assert session.error == "" and session.user == "ana"


@pytest.mark.parametrize(
    ("head", "saved"),
    [
        (b"BLENDER-v304REND", (3, 4)),
        (b"BLENDER_V279REND", (2, 79)),
        (b"BLENDER17-01v0500DATA", (5, 0)),
        (b"\x28\xb5\x2f\xfd compressed", None),
        (b"not a blend at all", None),
        (b"", None),
    ],
)
def test_saved_by_when_header_is_read_names_the_version_or_none(
    head: bytes, saved: tuple[int, int] | None
) -> None:
    assert blendheader.saved_by(head) == saved


def test_unreadable_when_file_is_from_a_newer_blender_names_both_versions() -> None:
    newer = b"BLENDER17-01v0500" + b"\0" * 32
    assert blendheader.unreadable(newer, (3, 4)) == (
        "it was saved by Blender 5.0, and Blender 3.4 cannot open files from a newer Blender"
    )
    assert blendheader.unreadable(newer, (5, 0)) == ""
    assert blendheader.unreadable(b"BLENDER-v304", (5, 0)) == ""
    assert blendheader.unreadable(b"\x28\xb5\x2f\xfd", (3, 4)) == ""  # cannot tell: tried


def test_choices_when_a_run_made_a_newer_revision_say_which_one_each_replaces() -> None:
    session = Session(synced=Synced("room", 2, "content:x"))
    session.followed("room", [{"revision": 3, "user": "ana", "tools": ["object.create"]}], [], [])
    pushed, pulled = session.choices()
    assert pushed.startswith("Push: your file replaces revision 3 by ana (object.create)")
    assert "stays in the history" in pushed
    assert pulled == (
        "Pull: revision 3 by ana (object.create) replaces your file; a copy of yours is kept "
        "beside it."
    )
    assert Session(synced=Synced("room", 2, "c")).choices()[0] == (
        "Push: your file becomes the revision after revision 2."
    )


def ran(*ops: tuple[str, str], committed: bool = True) -> dict[str, object]:
    operations = [{"tool": tool, "state": state, "args": {}} for tool, state in ops]
    return {"runId": "run-1", "prompt": "p", "committed": committed, "operations": operations}


def test_unreplayable_when_a_run_holds_code_or_a_file_names_the_step() -> None:
    assert unreplayable(ran(("object.create", "completed"), ("scene.snapshot", "completed"))) == ""
    assert "python.trusted" in unreplayable(
        ran(("object.create", "completed"), ("python.trusted", "completed"))
    )
    assert "scene.import" in unreplayable(ran(("scene.import", "completed")))
    assert "is failed" in unreplayable(ran(("object.create", "failed")))
    assert "changed nothing" in unreplayable(ran(("object.create", "completed"), committed=False))
    assert "made only by the mesh" in unreplayable({"committed": True, "operations": [{}]})


def test_undo_label_when_request_is_long_or_missing_stays_one_short_line() -> None:
    assert undo_label({"prompt": "add a cube\nnamed Box"}) == "blendmesh: add a cube named Box"
    assert undo_label({"runId": "run-9"}) == "blendmesh: run run-9"
    assert len(undo_label({"prompt": "x" * 500})) == len("blendmesh: ") + 60


def test_to_replay_when_newer_revisions_come_offers_each_once() -> None:
    session = Session(synced=Synced("s", 2, "content:a"))
    session.newer = [{"revision": 3}, {"revision": 4}]
    assert [r["revision"] for r in session.to_replay("s")] == [3, 4]
    assert session.to_replay("other") == []
    session.tried = ("s", 4)  # refused or failed: not tried again until a newer one
    assert session.to_replay("s") == []
    session.newer = [*session.newer, {"revision": 5}]
    assert [r["revision"] for r in session.to_replay("s")] == [3, 4, 5]
    assert Session().to_replay("s") == []  # never synced: nothing to replay onto


def test_drain_when_a_callback_raises_reports_it_and_keeps_draining() -> None:
    said: list[str] = []
    worker = Worker(broken=said.append)

    def explode(value: object) -> None:
        raise ReferenceError("StructRNA of type Mesh has been removed")

    got: list[object] = []
    worker.submit(lambda progress: 1, explode, said.append, said.append)
    worker.submit(lambda progress: 2, got.append, said.append, said.append)
    deadline = time.monotonic() + 5
    while len(got) < 1 and time.monotonic() < deadline:
        worker.drain()
        time.sleep(0.01)
    assert got == [2] and said == ["ReferenceError: StructRNA of type Mesh has been removed"]


def test_shown_changes_when_the_list_is_long_cuts_it_and_says_where_the_rest_is() -> None:
    text = [f"  + object Box{i} added" for i in range(MAX_CHANGE_LINES + 5)]

    shown = shown_changes({"text": text})

    assert shown[:MAX_CHANGE_LINES] == text[:MAX_CHANGE_LINES]
    assert shown[-1] == "... and 5 more lines: `blendmesh scenes diff`"
    assert shown_changes({"text": text[:3]}) == text[:3]
    assert shown_changes({}) == []
    assert len(shown_changes({"text": ["x" * 5000]})[0]) == 300


def test_listed_changes_when_the_session_moves_on_are_no_longer_shown() -> None:
    session = Session()
    session.synced = Synced("room", 2, "digest")
    session.changes, session.changes_of = ["scene room revision 2 ..."], ("room", 2)
    assert session.listed_changes() == ["scene room revision 2 ..."]
    session.synced = Synced("room", 3, "digest")
    assert session.listed_changes() == []


def test_run_words_when_a_run_has_no_prompt_shows_what_it_did_not_its_id() -> None:
    imported = {"runId": "run-1", "prompt": None, "request": "import a .blend (76.7 MB)"}
    assert run_words(imported) == "import a .blend (76.7 MB)"
    assert run_words({"runId": "run-2", "prompt": "add a\ncube", "request": None}) == "add a cube"
    # From a gateway that does not say what a run was: its id, cut short.
    assert run_words({"runId": "run-" + "x" * 300}) == "run run-xxxxxxxxxxxx"
    assert len(run_words({"runId": "r", "request": "y" * 5000})) == 200
