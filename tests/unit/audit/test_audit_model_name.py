"""Spec 002 §9: the audit record of each action names the model that planned it, and a
run answered in words names it on the run's row. Projected one event at a time, pure."""

from __future__ import annotations

import msgspec
import pytest

from contracts import events as ev
from contracts.receipts import Receipt
from services.audit.projections import RunView, project
from tests.unit.test_model_handlers import REQUESTED, planned_at


def replay(events: list[ev.AnyEvent]) -> tuple[RunView, list[dict[str, object]]]:
    """The run's view after ``events``, and every audit record they produced."""
    view, records = RunView(), []
    for seq, event in enumerate(events, start=1):
        changes = project(event, seq, view)
        run = next((c.row for c in changes if c.table == "runs"), view.run)
        actions = dict(view.actions)
        actions.update({c.row["operation_id"]: c.row for c in changes if c.table == "actions"})
        records += [c.row for c in changes if c.table == "audit_records"]
        view = RunView(run=run, actions=actions, records=view.records)
    return view, records


@pytest.mark.clause("002-§audit.1")
def test_audit_record_when_a_model_planned_the_action_names_the_model() -> None:
    planned = planned_at(1)
    receipt = Receipt(
        operation_id="op01", tool_name="object.create", safety_level="safe_write",
        status="succeeded", scene_hash_before="h0", scene_hash_after="h1",
    )  # fmt: skip
    done = ev.follow(
        planned, ev.OperationSucceeded, 2.0, operation_id="op01", mcp_call_id="m1",
        blender_mutation_id="b1", receipt=receipt,
    )  # fmt: skip
    view, (record,) = replay([REQUESTED, planned, done])
    assert record["model"] == "gemini-test" and record["tool_name"] == "object.create"
    assert view.run is not None and view.run["model"] == "gemini-test"


def test_run_row_when_answered_in_words_names_model_and_reply() -> None:
    said = ev.follow(REQUESTED, ev.Replied, 1.0, planner="gemini", text="hi", model="gm-1")
    view, records = replay([REQUESTED, said])
    assert records == []  # nothing ran: no action, no record
    assert view.run is not None
    assert (view.run["planner"], view.run["model"], view.run["message"]) == ("gemini", "gm-1", "hi")
    assert msgspec.to_builtins(said)["type"] == "run.replied"
