"""Planner handlers for gemini runs on in-memory ports: plan, repair loop, thread messages."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from contracts.events import (
    Denied,
    Event,
    Executed,
    Planned,
    PlanningStarted,
    PlanRejected,
    RunCompleted,
    RunFailed,
    RunRequested,
    ThreadMessage,
    follow,
)
from contracts.failures import failure
from contracts.operations import OperationSet
from contracts.receipts import Receipt
from services.planner.handlers import PlannerHandlers
from services.planner.model.port import ModelError, ModelReply, ModelRequest
from tests.support.catalog_fixture import CATALOG
from tests.support.planners import Log, model_planner, requested


class ScriptedModel:
    """Answers in order; records every request."""

    def __init__(self, *answers: str | ModelError) -> None:
        self.answers = list(answers)
        self.requests: list[ModelRequest] = []

    async def generate(self, request: ModelRequest) -> ModelReply:
        self.requests.append(request)
        item = self.answers.pop(0)
        if isinstance(item, ModelError):
            raise item
        return ModelReply(text=item, model="gemini-test", finish_reason="STOP")


def wire(*ops: tuple[str, str, dict[str, Any], list[str]]) -> str:
    return json.dumps(
        {
            "request_id": "x",
            "operations": [
                {
                    "operation_id": op_id,
                    "tool_name": tool,
                    "args_json": json.dumps(args),
                    "depends_on": deps,
                    "safety_level": "read_only" if tool == "scene.snapshot" else "safe_write",
                }
                for op_id, tool, args, deps in ops
            ],
        }
    )


GOOD = wire(("op01", "object.create", {"primitive": "cube", "name": "Box"}, []))
CYCLE = wire(("a", "scene.snapshot", {}, ["b"]), ("b", "scene.snapshot", {}, ["a"]))
UNKNOWN = wire(("op01", "python.exec", {"code": "1"}, []))
BAD_ARGS = wire(("op01", "object.create", {"primitive": "teapot"}, []))

REQUESTED = requested("add a cube named Box", planner="gemini")


def handlers(model: ScriptedModel, log: Log | None = None) -> PlannerHandlers:
    thread = [
        ThreadMessage(
            event_id="m0", at=0.0, thread_id="t1", run_id="r0", role="user", text="earlier ask"
        )
    ]

    async def read_thread(thread_id: str) -> Sequence[ThreadMessage]:
        return thread

    return model_planner(model, history=log or Log(REQUESTED), thread=read_thread)


def kinds(events: Sequence[Event]) -> list[str]:
    return [type(e).__name__ for e in events]


@pytest.mark.clause("002-§core-loop.3")
async def test_gemini_run_when_answer_valid_emits_user_message_and_planned() -> None:
    model = ScriptedModel(GOOD)
    user, started, planned = await handlers(model).on_requested(REQUESTED)
    assert isinstance(user, ThreadMessage) and user.role == "user"
    assert isinstance(started, PlanningStarted) and started.planner == "gemini"
    assert user.text == "add a cube named Box" and user.thread_id == "t1"
    assert isinstance(planned, Planned) and planned.planner == "gemini"
    assert planned.model == "gemini-test" and planned.iteration == 1
    assert planned.operation_set.request_id == "q1"
    assert model.requests[0].contents[0].text.startswith("earlier ask\n\nScene")


@pytest.mark.parametrize(
    ("bad", "code"),
    [
        ("not json at all", "SCHEMA_INVALID"),
        (GOOD.replace('"depends_on": []', '"x": 1'), "SCHEMA_INVALID"),
        (CYCLE, "GRAPH_CYCLE"),
        (UNKNOWN, "TOOL_UNKNOWN"),
        (BAD_ARGS, "ARGS_INVALID"),
    ],
)
async def test_gemini_run_when_first_answer_invalid_asks_again_with_failure(
    bad: str, code: str
) -> None:
    model = ScriptedModel(bad, GOOD)
    _, _, planned = await handlers(model).on_requested(REQUESTED)
    assert isinstance(planned, Planned) and planned.iteration == 2
    second = model.requests[1].contents
    assert second[-2].role == "model" and second[-2].text == bad
    assert f'"error_code":"{code}"' in second[-1].text


@pytest.mark.clause("002-§core-loop.16", "002-§non-goals.2")
async def test_gemini_run_when_three_answers_invalid_fails_with_last_contract() -> None:
    model = ScriptedModel("nope", CYCLE, UNKNOWN, GOOD)
    out = await handlers(model).on_requested(REQUESTED)
    assert kinds(out) == [
        "ThreadMessage", "PlanningStarted", "PlanRejected", "RunFailed", "ThreadMessage"
    ]  # fmt: skip
    _, _, rejected, failed, said = out
    assert isinstance(rejected, PlanRejected) and rejected.model == "gemini-test"
    assert isinstance(failed, RunFailed) and failed.failure.error_code == "TOOL_UNKNOWN"
    assert isinstance(said, ThreadMessage) and said.role == "assistant"
    assert said.text.startswith("Failed (TOOL_UNKNOWN)") and len(model.requests) == 3


@pytest.mark.clause("002-§errors.5")
async def test_gemini_run_when_model_blocked_fails_with_model_error() -> None:
    model = ScriptedModel(ModelError("blocked", "Gemini's answer was blocked by safety filters"))
    _, _, failed, _ = await handlers(model).on_requested(REQUESTED)
    assert isinstance(failed, RunFailed) and failed.failure.error_code == "MODEL_ERROR"
    assert not failed.failure.recoverable and "blocked by safety" in failed.message


async def test_gemini_run_when_no_prompt_fails_without_calling_the_model() -> None:
    model = ScriptedModel()
    out = await handlers(model).on_requested(RunRequested(**{**_fields(REQUESTED), "prompt": None}))
    assert kinds(out) == ["RunFailed", "ThreadMessage"] and not model.requests


def _fields(event: RunRequested) -> dict[str, Any]:
    return {f: getattr(event, f) for f in event.__struct_fields__}


def planned_at(iteration: int) -> Planned:
    return follow(
        REQUESTED,
        Planned,
        1.0,
        index=iteration,
        scene_id="s1",
        planner="gemini",
        operation_set=_plan(),
        schedule=["op01", "op02"],
        catalog_version="test",
        model="gemini-test",
        iteration=iteration,
    )


def _plan() -> OperationSet:
    from services.planner.graph import validate
    from services.planner.model.answer import decode_answer

    text = wire(
        ("op01", "object.create", {"primitive": "cube", "name": "Here"}, []),
        ("op02", "object.transform", {"name": "Ghost", "location": [1, 2, 3]}, []),
    )
    return validate(decode_answer(text, "q1"), CATALOG).operation_set


def executed(planned: Planned, failed: bool) -> Executed:
    receipts = [
        Receipt(operation_id="op01", tool_name="object.create", safety_level="safe_write",
                status="succeeded"),
        Receipt(operation_id="op02", tool_name="object.transform", safety_level="safe_write",
                status="rolled_back" if failed else "succeeded"),
    ]  # fmt: skip
    return follow(
        planned,
        Executed,
        2.0,
        scene_id="s1",
        receipts=receipts,
        scene_hash="h",
        blend_path="/s1.blend",
        failure=failure("TOOL_ERROR", "op02 failed: no Ghost") if failed else None,
        message="op02 (object.transform) failed: no object 'Ghost'" if failed else "",
    )


MOVE_HERE = wire(("op03", "object.transform", {"name": "Here", "location": [1, 2, 3]}, []))


async def test_gemini_run_when_execution_fails_asks_for_repair_as_next_iteration() -> None:
    planned = planned_at(1)
    model = ScriptedModel(MOVE_HERE)
    (again,) = await handlers(model, Log(REQUESTED, planned)).on_executed(executed(planned, True))
    assert isinstance(again, Planned) and again.iteration == 2 and again.model == "gemini-test"
    turns = model.requests[0].contents
    assert '"tool_name":"object.transform"' in turns[-2].text  # its earlier plan
    assert "no object 'Ghost'" in turns[-1].text and '"error_code":"TOOL_ERROR"' in turns[-1].text
    assert "op01 object.create: succeeded" in turns[-1].text
    assert "The ids op01 are taken" in turns[-1].text


async def test_gemini_repair_when_it_reuses_an_applied_id_for_another_call_asks_again() -> None:
    planned = planned_at(1)
    reuse = wire(("op01", "object.transform", {"name": "Here", "location": [1, 2, 3]}, []))
    same = wire(("op01", "object.create", {"primitive": "cube", "name": "Here"}, []))
    model = ScriptedModel(reuse, same)
    (again,) = await handlers(model, Log(REQUESTED, planned)).on_executed(executed(planned, True))
    assert isinstance(again, Planned) and again.iteration == 3  # the exact same call is fine
    assert '"error_code":"IDEMPOTENCY_CONFLICT"' in model.requests[1].contents[-1].text


@pytest.mark.clause("002-§core-loop.16")
async def test_gemini_run_when_execution_fails_on_last_iteration_fails_the_run() -> None:
    planned = planned_at(3)
    model = ScriptedModel()
    out = await handlers(model, Log(REQUESTED, planned)).on_executed(executed(planned, True))
    assert kinds(out) == ["RunFailed", "ThreadMessage"] and not model.requests
    assert isinstance(out[1], ThreadMessage)
    assert 'Applied: op01 object.create {"primitive":"cube","name":"Here"}' in out[1].text


@pytest.mark.clause("002-§core-loop.14")
async def test_gemini_run_when_executed_ok_completes_and_tells_the_thread() -> None:
    planned = planned_at(1)
    done, said = await handlers(ScriptedModel(), Log(REQUESTED, planned)).on_executed(
        executed(planned, False)
    )
    assert isinstance(done, RunCompleted) and done.summary.startswith("2 of 2 operations")
    assert isinstance(said, ThreadMessage) and said.role == "assistant"
    assert said.text.startswith("Completed: 2 of 2") and "op02 object.transform" in said.text


async def test_gemini_run_when_denied_fails_and_tells_the_thread() -> None:
    planned = planned_at(1)
    denied = follow(
        planned, Denied, 3.0, failure=failure("POLICY_BLOCKED", "x"), message="no", operation_ids=[]
    )
    failed, said = await handlers(ScriptedModel(), Log(REQUESTED, planned)).on_denied(denied)
    assert isinstance(failed, RunFailed) and failed.failure.error_code == "POLICY_BLOCKED"
    assert failed.message == "no"
    assert isinstance(said, ThreadMessage) and said.role == "assistant"
    assert said.text == "Failed (POLICY_BLOCKED): no" and said.thread_id == REQUESTED.thread_id


async def test_rules_run_when_model_wired_keeps_its_events_unchanged() -> None:
    rules = RunRequested(**{**_fields(REQUESTED), "planner": "rules"})
    (planned,) = await handlers(ScriptedModel()).on_requested(rules)
    assert isinstance(planned, Planned) and planned.planner == "rules" and planned.model is None
    rules_planned = follow(
        rules,
        Planned,
        1.0,
        scene_id="s1",
        planner="rules",
        operation_set=_plan(),
        schedule=["op01"],
        catalog_version="t",
    )
    out = await handlers(ScriptedModel(), Log(rules, rules_planned)).on_executed(
        executed(rules_planned, True)
    )
    assert kinds(out) == ["RunFailed"]
