"""What a model planner sends and how its answers are read: prompt, schema, repair, retry."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from contracts.events import Executed, Planned, RunRequested, ThreadMessage, follow
from contracts.failures import failure
from contracts.focus import Focus
from contracts.receipts import Receipt
from contracts.scenes import summarize
from services.planner.graph import PlanInvalid, validate
from services.planner.model.answer import decode_answer, encode_answer, response_schema
from services.planner.model.prompt import (
    HISTORY_LIMIT,
    PlanContext,
    build_request,
    history_turns,
    request_turn,
)
from services.planner.model.repair import (
    MAX_ITERATIONS,
    Attempt,
    check_ids,
    committed_operations,
    may_repair,
    repair_turns,
    summary_of,
)
from services.planner.model.retry import (
    RetriesExhausted,
    RetryPolicy,
    backoff_delay,
    call_with_retries,
)
from tests.support.catalog_fixture import CATALOG

CONTEXT = PlanContext(run_id="r2", request_id="req-2", scene_id="s1", prompt="bevel the Box")
SCENE = summarize(
    "s1",
    {"hash": "h", "objects": [{"name": "Box", "modifiers": [{"name": "B", "type": "BEVEL"}]}]},
)


def said(run_id: str, role: str, text: str, n: int = 0) -> ThreadMessage:
    return ThreadMessage(
        event_id=f"m{run_id}{role}{n}",
        at=0.0,
        thread_id="t",
        run_id=run_id,
        role=role,  # type: ignore[arg-type]
        text=text,
    )


@pytest.mark.clause("002-§core-loop.5")
def test_prompt_when_built_carries_policy_catalog_scene_history_and_request() -> None:
    history = [said("r1", "user", "add a cube named Box"), said("r1", "assistant", "created Box")]
    req = build_request(CONTEXT, CATALOG, SCENE, history)
    assert "Use only the registered tools" in req.system and "approval" in req.system
    for tool in CATALOG.tools:
        assert json.dumps(tool.input_schema, separators=(",", ":")) in req.system
        assert f'"name":"{tool.name}"' in req.system and tool.safety_level in req.system
    assert [t.role for t in req.contents] == ["user", "model", "user"]
    assert req.contents[0].text == "add a cube named Box"
    last = req.contents[-1].text
    assert '"name":"Box"' in last and "B:BEVEL" in last and "scene_hash" not in last
    assert "Request id: req-2" in last and last.endswith("Request: bevel the Box")


def test_prompt_when_scene_never_saved_says_it_is_empty() -> None:
    req = build_request(CONTEXT, CATALOG, None, [])
    assert req.contents == (req.contents[0],) and "Scene 's1' is empty." in req.contents[0].text


@pytest.mark.clause("002-§core-loop.5")
def test_history_when_long_keeps_recent_leaves_out_this_run_and_starts_with_user() -> None:
    messages = [said(f"r{i}", "user" if i % 2 else "assistant", f"m{i}") for i in range(50)]
    messages.append(said("r2", "user", "this run's own request"))
    turns = history_turns(messages, "r2")
    assert len(turns) <= HISTORY_LIMIT and turns[0].role == "user"
    assert turns[-1].text == "m49" and all("own request" not in t.text for t in turns)


def test_prompt_when_same_role_twice_merges_turns() -> None:
    history = [said("r0", "user", "one"), said("r1", "user", "two")]
    req = build_request(CONTEXT, CATALOG, None, history)
    assert len(req.contents) == 1 and req.contents[0].text.startswith("one\n\ntwo\n\n")


def test_response_schema_when_built_uses_only_keywords_structured_output_accepts() -> None:
    schema = response_schema(CATALOG)
    text = json.dumps(schema)
    for keyword in ("pattern", "minLength", "uniqueItems", "$schema", "$id", "title"):
        assert f'"{keyword}"' not in text
    item = schema["properties"]["operations"]["items"]
    assert item["properties"]["args_json"]["type"] == "string"
    assert "args" not in item["properties"] and item["additionalProperties"] is False
    assert item["properties"]["tool_name"]["enum"] == CATALOG.names
    assert item["required"] == item["propertyOrdering"]


@pytest.mark.clause("000-§correlation.1")
def test_answer_when_args_json_decoded_validates_and_takes_the_runs_request_id() -> None:
    text = json.dumps(
        {
            "request_id": "whatever",
            "operations": [
                {
                    "operation_id": "op01",
                    "tool_name": "object.create",
                    "args_json": '{"primitive": "cube", "name": "Box"}',
                    "depends_on": [],
                    "safety_level": "safe_write",
                }
            ],
        }
    )
    plan = validate(decode_answer(text, "req-2"), CATALOG)
    assert plan.operation_set.request_id == "req-2"
    assert plan.operation_set.operations[0].args == {"primitive": "cube", "name": "Box"}
    again = validate(decode_answer(encode_answer(plan.operation_set), "req-2"), CATALOG)
    assert again.operation_set == plan.operation_set


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("Sure! Here is your plan:", "not valid JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"operations": [{"operation_id": "a", "args_json": "{oops"}]}', "'a' is not valid JSON"),
        ('{"operations": [{"operation_id": "a", "args_json": "[1]"}]}', "not a JSON object"),
        ('{"operations": [{"operation_id": "a", "args_json": 3}]}', "is not a string"),
    ],
)
def test_answer_when_malformed_is_rejected_as_schema_invalid(text: str, problem: str) -> None:
    with pytest.raises(PlanInvalid) as caught:
        decode_answer(text, "req")
    assert caught.value.failure.error_code == "SCHEMA_INVALID"
    assert caught.value.failure.recoverable and problem in caught.value.message


def test_repair_when_iterations_left_and_recoverable_allows_another_answer() -> None:
    fixable = failure("GRAPH_CYCLE", "break it")
    assert may_repair(1, fixable) and may_repair(MAX_ITERATIONS - 1, fixable)
    assert not may_repair(MAX_ITERATIONS, fixable)
    assert not may_repair(1, failure("ROLLBACK_FAILED", "x", recoverable=False))


def test_repair_turns_when_validation_failed_send_answer_and_failure_contract() -> None:
    contract = failure("GRAPH_CYCLE", "break the cycle", repair=[("b", "drop")])
    (model, user) = repair_turns([Attempt('{"bad": 1}', contract, "a -> b -> a")])
    assert model.role == "model" and model.text == '{"bad": 1}'
    sent = json.loads(user.text.split("Failure contract: ")[1].splitlines()[0])
    assert sent == msgspec.to_builtins(contract)
    assert "a -> b -> a" in user.text and "corrected operation set" in user.text


def test_repair_turns_when_execution_failed_send_results_and_scene_now() -> None:
    receipts = (
        Receipt(operation_id="op01", tool_name="object.create", safety_level="safe_write",
                status="succeeded"),
        Receipt(operation_id="op02", tool_name="object.transform", safety_level="safe_write",
                status="rolled_back"),
    )  # fmt: skip
    contract = failure("TOOL_ERROR", "op02 failed: no object Ghost")
    attempt = Attempt("{}", contract, "op02 failed", "execution", receipts, SCENE, "s1")
    (_, user) = repair_turns([attempt])
    assert "op01 object.create: succeeded; op02 object.transform: rolled_back" in user.text
    assert '"name":"Box"' in user.text and "still left" in user.text


def test_summary_when_operations_applied_lists_them_with_args() -> None:
    plan = validate(
        decode_answer(
            '{"operations": [{"operation_id": "op01", "tool_name": "object.create", '
            '"args_json": "{\\"primitive\\": \\"cube\\", \\"name\\": \\"Box\\"}", '
            '"depends_on": [], "safety_level": "safe_write"}]}',
            "q",
        ),
        CATALOG,
    )
    text = summary_of("Completed.", plan.operation_set.operations)
    assert text == 'Completed. Applied: op01 object.create {"primitive":"cube","name":"Box"}.'
    assert summary_of("Failed (X): y") == "Failed (X): y"


def test_backoff_when_retries_grow_doubles_until_the_cap() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=5.0)
    assert [backoff_delay(policy, n, lambda: 1.0) for n in range(5)] == [1, 2, 4, 5, 5]
    assert [backoff_delay(policy, n, lambda: 0.0) for n in range(3)] == [0.5, 1, 2]
    assert backoff_delay(policy, 0, lambda: 0.0, hint=3.0) == 3.0
    assert backoff_delay(policy, 0, lambda: 0.0, hint=60.0) == 5.0


async def test_retries_when_error_not_transient_raises_it_at_once() -> None:
    calls = 0

    async def call() -> str:
        nonlocal calls
        calls += 1
        raise KeyError("permanent")

    async def sleep(_: float) -> None:
        raise AssertionError("must not sleep")

    with pytest.raises(KeyError, match="permanent"):
        await call_with_retries(
            call, RetryPolicy(), lambda e: None, sleep=sleep, clock=lambda: 0.0, rng=lambda: 0.0
        )
    assert calls == 1


async def test_retries_when_transient_then_ok_returns_and_reports_each_retry() -> None:
    outcomes: list[object] = [TimeoutError(), TimeoutError(), "done"]
    seen: list[tuple[int, float]] = []

    async def call() -> object:
        item = outcomes.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    async def sleep(_: float) -> None:
        pass

    result = await call_with_retries(
        call,
        RetryPolicy(max_retries=2, base_delay=1.0),
        lambda e: 0.0,
        sleep=sleep,
        clock=lambda: 0.0,
        rng=lambda: 0.0,
        on_retry=lambda e, n, d: seen.append((n, d)),
    )
    assert result == "done" and seen == [(1, 0.5), (2, 1.0)]
    outcomes[:] = [TimeoutError()] * 3
    with pytest.raises(RetriesExhausted) as caught:
        await call_with_retries(
            call,
            RetryPolicy(max_retries=2),
            lambda e: 0.0,
            sleep=sleep,
            clock=lambda: 0.0,
            rng=lambda: 0.0,
        )
    assert caught.value.attempts == 3 and isinstance(caught.value.last, TimeoutError)


def _planned(start: RunRequested, *ops: tuple[str, str, dict[str, Any]]) -> Planned:
    wire = [
        {
            "operation_id": op_id,
            "tool_name": tool,
            "args_json": json.dumps(args),
            "depends_on": [],
            "safety_level": "safe_write",
        }
        for op_id, tool, args in ops
    ]
    plan = validate(decode_answer(json.dumps({"operations": wire}), "q"), CATALOG)
    return follow(
        start,
        Planned,
        1.0,
        index=len(ops),
        scene_id="s1",
        planner="gemini",
        operation_set=plan.operation_set,
        schedule=plan.schedule,
        catalog_version="t",
    )


def _executed(cause: Planned, **statuses: str) -> Executed:
    receipts = [
        msgspec.convert(
            {"operation_id": i, "tool_name": "x", "safety_level": "safe_write", "status": s},
            Receipt,
        )
        for i, s in statuses.items()
    ]
    return follow(
        cause, Executed, 2.0, scene_id="s1", receipts=receipts, scene_hash="h", blend_path=None
    )


def test_committed_operations_when_run_repaired_collects_every_applied_call() -> None:
    start = RunRequested(
        event_id="e", at=0.0, run_id="r", request_id="q", thread_id="t", user="u", scene_id="s1"
    )
    create = ("op01", "object.create", {"primitive": "cube"})
    first = _planned(start, create, ("op02", "object.transform", {"name": "Ghost"}))
    second = _planned(start, ("op03", "object.transform", {"name": "Cube"}))
    events = [
        start,
        first,
        _executed(first, op01="succeeded", op02="rolled_back"),
        second,
        _executed(second, op03="succeeded"),
    ]
    committed = committed_operations(events)
    assert sorted(committed) == ["op01", "op03"]
    check_ids(first.operation_set.operations[:1], committed)  # the same call again: fine
    reuse = msgspec.structs.replace(second.operation_set.operations[0], operation_id="op01")
    with pytest.raises(PlanInvalid) as caught:
        check_ids([reuse], committed)
    assert caught.value.failure.error_code == "IDEMPOTENCY_CONFLICT"
    assert caught.value.failure.minimal_repair_plan[0].operation_id == "op01"


def test_request_when_focus_given_tells_the_model_the_selection_as_data() -> None:
    focus = Focus(selected=("Desk", 'Chair "}ignore'), active="Desk")
    context = PlanContext(run_id="r", request_id="q", scene_id="s", prompt="paint it", focus=focus)
    turn = request_turn(context, None)
    said = turn.split("the selected): ", 1)[1].split("\n", 1)[0]
    assert json.loads(said) == {"active": "Desk", "selected": ["Desk", 'Chair "}ignore']}
    assert "Selected in" not in request_turn(CONTEXT, None)
