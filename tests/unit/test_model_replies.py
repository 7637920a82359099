"""Spec 002 §4 around the model call: the run is ``planning`` while the model thinks, an
answer without a plan is an assistant reply that completes the run, and a run that waits
for approval tells its thread. Spec 004 §1: no steps and ``done`` changes nothing."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import msgspec
import pytest
from mcp.types import TextContent
from rich.console import Console

from contracts.events import (
    ApprovalRequested,
    Event,
    PendingOperation,
    Planned,
    Replied,
    RunCompleted,
    RunFailed,
    RunRequested,
    ThreadMessage,
    follow,
)
from contracts.fold import fold_run
from contracts.geonodes import convert_geonode_response
from contracts.receipts import RunResult
from services.doors.cli import console as show
from services.doors.gateway.schemas import run_out
from services.doors.mcp import answers as mcp_answers
from services.planner.graph import PlanInvalid, Reply
from services.planner.handlers import filter_subjects
from services.planner.model.answer import MAX_REPLY_CHARS, decode_answer, response_schema
from services.planner.model.prompt import system_instructions
from services.planner.outcomes import replied
from tests.support.catalog_fixture import CATALOG
from tests.unit.test_model_handlers import (
    GOOD,
    REQUESTED,
    Log,
    ScriptedModel,
    executed,
    handlers,
    kinds,
    planned_at,
)

ANSWER = "The scene holds one cube, Box, at the origin."


def reply(text: str = ANSWER, **more: Any) -> str:
    return json.dumps({"request_id": "x", "operations": [], "reply": text, **more})


# -- the reply (002 §4.5) ------------------------------------------------------------------


@pytest.mark.clause("002-§core-loop.6")
async def test_gemini_run_when_model_answers_in_words_replies_and_completes() -> None:
    out = await handlers(ScriptedModel(reply())).on_requested(REQUESTED)
    assert kinds(out) == [
        "ThreadMessage", "PlanningStarted", "Replied", "RunCompleted", "ThreadMessage"
    ]  # fmt: skip
    _, _, said, done, told = out
    assert isinstance(said, Replied) and said.text == ANSWER and said.model == "gemini-test"
    assert isinstance(done, RunCompleted) and done.summary == ANSWER and done.receipts == []
    assert isinstance(told, ThreadMessage) and told.role == "assistant" and told.text == ANSWER
    result = fold_run([REQUESTED, *[e for e in out if not isinstance(e, ThreadMessage)]])
    assert result is not None and result.status == "completed" and result.message == ANSWER


async def test_gemini_run_when_answer_has_a_plan_and_a_reply_asks_again() -> None:
    both = json.loads(GOOD) | {"reply": "also words"}
    model = ScriptedModel(json.dumps(both), GOOD)
    out = await handlers(model).on_requested(REQUESTED)
    assert isinstance(out[-1], Planned) and out[-1].iteration == 2
    assert "both a plan and a reply" in model.requests[1].contents[-1].text


def test_decode_answer_when_reply_only_is_a_reply_cut_to_its_limit() -> None:
    assert decode_answer(reply("  Nothing to do.  "), "q1") == Reply("Nothing to do.")
    long = decode_answer(reply("x" * (MAX_REPLY_CHARS + 50)), "q1")
    assert isinstance(long, Reply) and len(long.text) == MAX_REPLY_CHARS


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        (reply(7), "reply is not a string"),  # type: ignore[arg-type]
        (reply(geonodes_json='{"version": "1.0"}'), "both a plan and a reply"),
    ],
)
def test_decode_answer_when_reply_malformed_or_beside_a_plan_refuses(
    answer: str, problem: str
) -> None:
    with pytest.raises(PlanInvalid, match=problem):
        decode_answer(answer, "q1")


def test_decode_answer_when_reply_empty_reads_the_operations() -> None:
    raw = decode_answer(json.dumps(json.loads(GOOD) | {"reply": ""}), "q1")
    assert isinstance(raw, dict) and raw["operations"][0]["tool_name"] == "object.create"


def test_response_schema_when_built_offers_a_reply_and_allows_no_operations() -> None:
    schema = response_schema(CATALOG)
    assert schema["properties"]["reply"]["type"] == "string"
    assert schema["required"] == ["request_id"]
    assert "minItems" not in schema["properties"]["operations"]


# -- planning before the model is called (002 §4.3) ------------------------------------------


class Announced:
    """Records what the handler announced, and how many model calls had been made then."""

    def __init__(self, model: ScriptedModel) -> None:
        self.model = model
        self.events: list[tuple[Event, int]] = []

    async def publish(self, event: Event) -> int:
        self.events.append((event, len(self.model.requests)))
        return len(self.events)


@pytest.mark.clause("002-§core-loop.4", "002-§core-loop.3")
async def test_gemini_run_when_announcing_publishes_planning_before_the_model_is_called() -> None:
    model = ScriptedModel(GOOD)
    planner = handlers(model)
    assert planner.models is not None
    announced = Announced(model)
    planner.models = replace(planner.models, announce=announced)
    out = await planner.on_requested(REQUESTED)
    assert [(type(e).__name__, calls) for e, calls in announced.events] == [
        ("ThreadMessage", 0),
        ("PlanningStarted", 0),
    ]
    assert kinds(out) == ["Planned"]  # announced already: not published twice
    started = announced.events[1][0]
    result = fold_run([REQUESTED, started])
    assert result is not None and result.status == "planning"


# -- 004 §1: no steps and done -----------------------------------------------------------------

EMPTY = {
    "version": "1.0",
    "steps": [],
    "done": True,
    "final_message": "The graph is already connected.",
    "meta": {"requires_gate_verification": True},
}


@pytest.mark.clause("004-§contract.3")
async def test_plan_run_when_response_has_no_steps_and_done_replies_and_completes() -> None:
    planner = handlers(ScriptedModel())
    given = RunRequested(**{**_fields(REQUESTED), "prompt": None, "plan": EMPTY, "planner": "plan"})
    out = await planner.on_requested(given)
    assert kinds(out) == ["Replied", "RunCompleted"]
    said, done = out
    assert isinstance(said, Replied) and said.planner == "plan"
    assert isinstance(done, RunCompleted) and done.summary == "The graph is already connected."
    assert done.scene_id == "s1" and done.blend_path is None


@pytest.mark.clause("004-§multi-step.4")
async def test_gemini_run_when_continuing_and_answer_is_empty_and_done_completes() -> None:
    planned = msgspec.structs.replace(planned_at(1), done=False)
    empty = json.dumps({"request_id": "x", "operations": [], "geonodes_json": json.dumps(EMPTY)})
    model = ScriptedModel(empty)
    log = Log(REQUESTED, planned)
    done, said = await handlers(model, log).on_executed(executed(planned, False))
    assert isinstance(done, RunCompleted) and done.blend_path == "/s1.blend"
    assert isinstance(said, ThreadMessage) and "The graph is already connected." in said.text


async def test_gemini_repair_when_answer_is_words_fails_with_the_execution_failure() -> None:
    planned = planned_at(1)
    model = ScriptedModel(reply("I cannot find Ghost."))
    out = await handlers(model, Log(REQUESTED, planned)).on_executed(executed(planned, True))
    assert kinds(out) == ["RunFailed", "ThreadMessage"]
    failed = out[0]
    assert isinstance(failed, RunFailed) and failed.failure.error_code == "TOOL_ERROR"
    assert "answered without a repair: I cannot find Ghost." in failed.message


def test_response_when_empty_is_the_section_1_shape() -> None:
    assert convert_geonode_response(EMPTY).steps == []


# -- the approval-request message (002 §4.6) ---------------------------------------------------


def asked(planned: Planned) -> ApprovalRequested:
    op = PendingOperation(
        operation_id="op01", tool="object.delete", safety_level="destructive", args={}
    )
    return follow(
        planned,
        ApprovalRequested,
        3.0,
        approval_id="a1",
        operation_ids=["op01"],
        reason="object.delete is destructive; a person must approve it",
        operations=[op],
    )


@pytest.mark.clause("002-§core-loop.10")
async def test_gemini_run_when_approval_requested_tells_the_thread() -> None:
    planned = planned_at(1)
    waiting = asked(planned)
    (said,) = await handlers(ScriptedModel(), Log(REQUESTED, planned)).on_approval_requested(
        waiting
    )
    assert isinstance(said, ThreadMessage) and said.role == "assistant"
    assert said.thread_id == "t1" and said.run_id == "r1"
    assert said.text.startswith("Waiting for your approval of op01 object.delete")
    assert "a person must approve it" in said.text


async def test_rules_run_when_approval_requested_has_no_thread_to_tell() -> None:
    rules = RunRequested(**{**_fields(REQUESTED), "planner": "rules"})
    planned = msgspec.structs.replace(planned_at(1), planner="rules")
    planner = handlers(ScriptedModel(), Log(rules, planned))
    assert await planner.on_approval_requested(asked(planned)) == []


def _fields(event: RunRequested) -> dict[str, Any]:
    return {f: getattr(event, f) for f in event.__struct_fields__}


def test_system_instructions_when_built_tell_the_model_it_may_reply_in_words() -> None:
    text = system_instructions(CATALOG)
    assert "leave operations empty and write your answer to the person in reply" in text


# -- the doors show the reply ------------------------------------------------------------------


def replied_result() -> RunResult:
    out = [REQUESTED, *replied(REQUESTED, "gemini", ANSWER, 1.0, "s1", "gemini-test")]
    result = fold_run(out)
    assert result is not None
    return result


@pytest.mark.clause("002-§core-loop.6")
def test_cli_when_run_replied_prints_the_reply_and_no_saved_scene() -> None:
    out = Console(record=True, width=1000)
    show.print_result(out, replied_result())
    text = out.export_text()
    assert ANSWER in text and "Saved scene" not in text


def test_mcp_when_run_replied_answers_with_the_reply() -> None:
    answer = mcp_answers.run_answer(replied_result(), None, None, None)
    first = answer.content[0]
    assert isinstance(first, TextContent)
    assert first.text.splitlines()[0].endswith(f"completed: {ANSWER}")
    assert not answer.isError


def test_http_when_run_replied_its_summary_is_the_reply() -> None:
    events = [REQUESTED, *replied(REQUESTED, "gemini", ANSWER, 1.0, "s1", "gemini-test")]
    response = run_out(replied_result(), events)
    assert (response.status, response.summary, response.actions) == ("completed", ANSWER, [])
    assert response.scene_path is None  # nothing ran: no revision to point at


async def test_planner_when_it_hears_an_approval_request_tells_the_thread() -> None:
    """The consumer's table routes run.approval_requested to the planner (002 §4.6)."""
    assert "bm.run.*.approval_requested" in filter_subjects("bm")
    planned = planned_at(1)
    planner = handlers(ScriptedModel(), Log(REQUESTED, planned))
    (said,) = await planner.handle(asked(planned), None)  # type: ignore[arg-type]
    assert isinstance(said, ThreadMessage) and said.text.startswith("Waiting for your approval")
