"""The one view of a run every door answers with, built from hand-made event lists."""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec
import pytest

from contracts import events as ev
from contracts.failures import failure
from contracts.gates import GateEnvelope
from contracts.operations import Operation, OperationSet
from contracts.python_steps import code_sha256
from contracts.receipts import Receipt
from services.doors.core.run_view import Gathered, RunView, answer_hash
from tests.support.trusted_runs import python_op

REQ = ev.RunRequested(
    event_id="e0",
    at=1.0,
    run_id="run1",
    request_id="req1",
    thread_id="th1",
    user="ana",
    scene_id="shot",
    prompt="make a cube and delete the old one",
)


def op(op_id: str, tool: str = "object.create", level: str = "safe_write") -> Operation:
    return Operation(
        operation_id=op_id,
        tool_name=tool,
        args={"name": op_id},
        depends_on=[],
        safety_level=level,  # type: ignore[arg-type]
    )


CUBE, WIPE = op("cube"), op("wipe", "object.delete", "destructive")


class Run:
    """One run's events in order, each caused by the one before."""

    def __init__(self) -> None:
        self.events: list[ev.AnyEvent] = [REQ]

    def then(self, kind: type[Any], **fields: Any) -> Run:
        last = self.events[-1]
        assert isinstance(last, ev.RunEvent)
        self.events.append(ev.follow(last, kind, last.at + 1, len(self.events), **fields))
        return self

    def planned(self, *ops: Operation) -> Run:
        return self.then(
            ev.Planned,
            scene_id="shot",
            planner="rules",
            operation_set=OperationSet(request_id="req1", operations=list(ops)),
            schedule=[o.operation_id for o in ops],
            catalog_version="c1",
        )

    def decided(self, *asked: str) -> Run:
        planned = next(e for e in reversed(self.events) if isinstance(e, ev.Planned))
        decisions = [
            ev.OperationDecision(
                operation_id=o.operation_id,
                tool_name=o.tool_name,
                safety_level=o.safety_level,
                mode="require_approval" if o.operation_id in asked else "allow",
                reason="r",
            )
            for o in planned.operation_set.operations
        ]
        return self.then(ev.PolicyDecided, decisions=decisions, policy_set="p1")

    def asked(self, approval_id: str, *ops: Operation, **fields: Any) -> Run:
        pending = [
            ev.PendingOperation(
                operation_id=o.operation_id, tool=o.tool_name, safety_level=o.safety_level
            )
            for o in ops
        ]
        given: dict[str, Any] = {"request_hash": "h" * 64, "operations": pending, **fields}
        ids = [o.operation_id for o in ops]
        return self.then(
            ev.ApprovalRequested, approval_id=approval_id, operation_ids=ids, reason="d", **given
        )

    def approved(self, *ops: Operation) -> Run:
        return self.then(
            ev.Approved,
            scene_id="shot",
            operation_set=OperationSet(request_id="req1", operations=list(ops)),
            schedule=[o.operation_id for o in ops],
            approved_by="ana",
        )

    def ran(self, o: Operation, status: str = "succeeded") -> Run:
        self.then(
            ev.OperationStarted,
            operation_id=o.operation_id,
            tool_name=o.tool_name,
            mcp_call_id="m",
            scene_hash_before="h0",
        )
        receipt = Receipt(
            operation_id=o.operation_id,
            tool_name=o.tool_name,
            safety_level=o.safety_level,
            status=status,  # type: ignore[arg-type]
            scene_hash_after="h1",
        )
        if status == "failed":
            return self.then(
                ev.OperationFailed,
                operation_id=o.operation_id,
                mcp_call_id="m",
                receipt=receipt,
                failure=failure("TOOL_ERROR", "fix the args"),
            )
        return self.then(
            ev.OperationSucceeded,
            operation_id=o.operation_id,
            mcp_call_id="m",
            blender_mutation_id="b",
            receipt=receipt,
        )

    def view(self) -> RunView:
        view = RunView.of(self.events)
        assert view is not None
        return view


def test_view_when_no_run_requested_is_none() -> None:
    planned = Run().planned(CUBE).events[1:]
    assert RunView.of([]) is None and RunView.of(planned) is None


@pytest.mark.parametrize(
    ("build", "state"),
    [
        (lambda r: r, "queued"),
        (lambda r: r.then(ev.PlanningStarted, planner="rules"), "planning"),
        (lambda r: r.planned(CUBE).decided(), "planning"),
        (lambda r: r.planned(CUBE).decided().approved(CUBE), "executing"),
    ],
)
def test_view_when_run_is_under_way_waits_on_nothing_and_has_no_failure(
    build: Any, state: str
) -> None:
    view = build(Run()).view()
    assert view.status == state
    assert (view.pending, view.asked, view.failure, view.committed) == (None, None, None, False)
    assert view.awaited == [] and view.receipts == []


def test_view_when_approval_requested_shows_what_is_asked_and_each_step() -> None:
    run = Run().planned(CUBE, WIPE).decided("wipe").asked("a1", WIPE)
    view = run.view()
    assert view.status == "awaiting_confirmation" and view.awaited == ["wipe"]
    pending = view.pending
    assert pending is not None and view.asked is run.events[-1]
    assert (pending.run_id, pending.approval_id, pending.reason) == ("run1", "a1", "d")
    assert pending.request_hash == pending.quote == "h" * 64
    assert [(o.operation_id, o.tool, o.safety_level) for o in pending.operations] == [
        ("wipe", "object.delete", "destructive")
    ]
    assert (pending.code_sha256, pending.approve_command) == ([], "blendmesh approve run1")
    assert pending.reject_command == "blendmesh reject run1"
    steps = [(s.operation_id, s.state, s.requires_approval, s.receipt) for s in view.steps]
    assert steps == [
        ("cube", "planned", False, None),
        ("wipe", "awaiting_confirmation", True, None),
    ]
    assert [(s.planned_at, s.changed_at) for s in view.steps] == [(2.0, 2.0), (2.0, 4.0)]


def test_view_when_trusted_python_is_asked_quotes_its_hash_in_the_command() -> None:
    code = "import bpy\n"
    run = Run().planned(CUBE)
    run.then(
        ev.ApprovalRequested,
        approval_id="a1",
        operation_ids=["py"],
        reason="trusted",
        request_hash="h" * 64,
        operations=[python_op("py", code)],
    )
    pending = run.view().pending
    assert pending is not None and pending.code_sha256 == [code_sha256(code)]
    assert pending.approve_command == f"blendmesh approve run1 --code-sha256 {code_sha256(code)}"


def test_view_when_approval_is_older_than_its_operations_reads_them_from_the_plan() -> None:
    run = Run().planned(CUBE, WIPE)
    run.then(ev.ApprovalRequested, approval_id="a1", operation_ids=["wipe"], reason="d")
    legacy = run.events[-1]
    assert isinstance(legacy, ev.ApprovalRequested)
    pending = run.view().pending
    assert pending is not None and pending.request_hash == ""
    assert [(o.operation_id, o.args) for o in pending.operations] == [("wipe", {"name": "wipe"})]
    stand_in = hashlib.sha256(msgspec.json.encode(["a1", "run1", ["wipe"]])).hexdigest()
    assert pending.quote == answer_hash(legacy) == stand_in


def test_view_when_approved_and_completed_has_committed_its_revision() -> None:
    run = Run().planned(CUBE, WIPE).decided("wipe").asked("a1", WIPE)
    run.then(ev.ApprovalResolved, approval_id="a1", decision="approve_once", resolved_by="ana")
    run.approved(CUBE, WIPE).ran(CUBE).ran(WIPE)
    receipts = [e.receipt for e in run.events if isinstance(e, ev.OperationSucceeded)]
    run.then(ev.Executed, scene_id="shot", receipts=receipts, scene_hash="h2", blend_path="b")
    gates = GateEnvelope(success=False, failed_gates=["names"], messages=["bad name"])
    run.then(
        ev.GatesEvaluated, scene_id="shot", revision=2, guardians=["g"], result="{}", envelope=gates
    )
    run.then(ev.RunCompleted, summary="2 of 2 applied", blend_path=None, scene_hash="h2")
    view = run.view()
    assert (view.status, view.message, view.scene_hash, view.committed) == (
        "completed",
        "2 of 2 applied",
        "h2",
        True,
    )
    assert (view.pending, view.asked, view.failure, view.gates) == (None, None, None, gates)
    assert (view.succeeded, view.replied, view.described) == (2, False, False)
    assert [(s.state, s.receipt) for s in view.steps] == [
        ("completed", receipts[0]),
        ("completed", receipts[1]),
    ]


def test_view_when_planner_replied_in_words_is_a_reply_with_nothing_committed() -> None:
    run = Run().then(ev.Replied, planner="gemini", text="a cube", model="m")
    view = run.then(ev.RunCompleted, summary="a cube", blend_path=None, scene_hash=None).view()
    assert (view.status, view.replied, view.committed, view.message) == (
        "completed",
        True,
        False,
        "a cube",
    )


@pytest.mark.parametrize(
    ("build", "code"),
    [
        (
            lambda r: r.then(
                ev.PlanRejected,
                planner="rules",
                failure=failure("TOOL_UNKNOWN", "use a known tool", recoverable=False),
                message="no tool x",
            ),
            "TOOL_UNKNOWN",
        ),
        (
            lambda r: (
                r.planned(WIPE)
                .asked("a1", WIPE)
                .then(
                    ev.Denied,
                    failure=failure("APPROVAL_REJECTED", "ask again", recoverable=False),
                    message="no tool x",
                    operation_ids=["wipe"],
                )
            ),
            "APPROVAL_REJECTED",
        ),
        (
            lambda r: (
                r.planned(CUBE)
                .approved(CUBE)
                .ran(CUBE, "failed")
                .then(
                    ev.RunFailed, failure=failure("TOOL_ERROR", "fix the args"), message="no tool x"
                )
            ),
            "TOOL_ERROR",
        ),
    ],
)
def test_view_when_run_failed_names_code_message_and_hint(build: Any, code: str) -> None:
    view = build(Run()).view()
    failed = view.failure
    assert view.status == "failed" and failed is not None
    assert (failed.code, failed.message) == (code, "no tool x")
    assert failed.hint == failed.contract.retry_hint != ""
    assert failed.recoverable is failed.contract.recoverable
    assert failed.repair == failed.contract.minimal_repair_plan
    assert view.pending is None and view.asked is None


def test_view_when_run_failed_after_a_denial_keeps_the_last_word() -> None:
    run = Run().planned(WIPE).asked("a1", WIPE)
    run.then(ev.Denied, failure=failure("APPROVAL_REJECTED", "a"), message="m1", operation_ids=[])
    run.then(ev.RunFailed, failure=failure("APPROVAL_EXPIRED", "b"), message="m2")
    failed = run.view().failure
    assert failed is not None and (failed.code, failed.message) == ("APPROVAL_EXPIRED", "m2")


def test_view_when_replanned_shows_the_last_plan_and_its_approval() -> None:
    fix = op("fix", "object.delete", "destructive")
    run = Run().planned(CUBE, WIPE).decided("wipe").asked("a1", WIPE)
    run.then(ev.ApprovalResolved, approval_id="a1", decision="approve_once", resolved_by="ana")
    run.approved(CUBE, WIPE).ran(CUBE, "failed")
    run.planned(fix).decided("fix").asked("a2", fix, request_hash="k" * 64)
    view = run.view()
    pending = view.pending
    assert view.status == "awaiting_confirmation" and view.awaited == ["fix"]
    assert pending is not None and (pending.approval_id, pending.quote) == ("a2", "k" * 64)
    assert view.asked is not None and view.asked.approval_id == "a2"
    assert [(s.operation_id, s.state, s.requires_approval) for s in view.steps] == [
        ("fix", "awaiting_confirmation", True)
    ]


def test_view_when_built_with_a_result_shows_that_results_receipts() -> None:
    run = Run().planned(CUBE).approved(CUBE)
    receipt = Receipt(
        operation_id="cube", tool_name="object.create", safety_level="safe_write", status="failed"
    )
    result = msgspec.structs.replace(run.view().result, receipts=[receipt])
    view = RunView.build(result, run.events)
    assert [(s.operation_id, s.receipt) for s in view.steps] == [("cube", receipt)]


def test_view_of_a_result_alone_has_no_steps_and_quotes_the_policys_hash() -> None:
    waiting = Run().planned(WIPE).asked("a1", WIPE).view().result
    view = RunView.of_result(waiting)
    pending = view.pending
    assert (view.steps, view.asked) == ((), None)
    assert pending is not None and pending.quote == "h" * 64
    assert RunView.of_result(msgspec.structs.replace(waiting, approval=None)).pending is None


def test_gathered_when_a_follower_hands_events_on_keeps_them_and_passes_each_on() -> None:
    run = Run().planned(CUBE, WIPE).decided("wipe").asked("a1", WIPE)
    heard: list[ev.AnyEvent] = []
    gathered = Gathered(heard.append)
    for event in run.events:
        gathered(event)
    assert heard == gathered.events == run.events
    view = gathered.view(run.view().result)
    assert view == run.view() and view.pending is not None


def test_view_when_a_revision_hash_is_missing_or_empty_has_committed_nothing() -> None:
    done = Run().then(ev.RunCompleted, summary="s", blend_path=None, scene_hash="").view()
    assert (done.scene_hash, done.committed) == ("", False)
