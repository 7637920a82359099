"""Geometry Nodes responses through the planner's handlers on in-memory ports: the plan
backend, the model's ``geonodes_json`` answers, ``done`` and failures naming their step."""

from __future__ import annotations

import json
from typing import Any

import pytest

from contracts.events import (
    Executed,
    GatesEvaluated,
    Planned,
    RunCompleted,
    RunFailed,
    ThreadMessage,
    follow,
)
from contracts.failures import failure
from contracts.gates import GateEnvelope
from contracts.nodes import NodeCatalog
from contracts.receipts import Receipt
from services.planner.graph import PlanInvalid
from services.planner.handlers import PlannerHandlers
from services.planner.model import prompt_geonodes
from services.planner.model.answer import GEONODES_FIELD, decode_answer, response_schema
from services.planner.model.port import ModelReply, ModelRequest
from services.planner.model.prompt import PlanContext, build_request
from services.planner.model.prompt_geonodes import node_section
from services.planner.outcomes import naming_step
from services.runtime.service.errors import Retry
from tests.support.geonode_fixture import EXAMPLE_9, GN_CATALOG, NODES, subdivide
from tests.support.planners import Log, model_planner, planner, requested


class StaticNodes:
    def __init__(self, nodes: NodeCatalog | None) -> None:
        self.nodes = nodes

    async def get(self) -> NodeCatalog | None:
        return self.nodes


class ScriptedModel:
    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.requests: list[ModelRequest] = []

    async def generate(self, request: ModelRequest) -> ModelReply:
        self.requests.append(request)
        return ModelReply(text=self.answers.pop(0), model="gemini-test", finish_reason="STOP")


def handlers(
    nodes: NodeCatalog | None = NODES, model: ScriptedModel | None = None, log: Log | None = None
) -> PlannerHandlers:
    if model is None:
        return planner(GN_CATALOG, history=log, nodes=StaticNodes(nodes))
    return model_planner(model, GN_CATALOG, history=log, nodes=StaticNodes(nodes))


def executed(cause: Planned, *receipts: Receipt, failed: bool = False) -> Executed:
    contract = None
    if failed:
        bad = next(r for r in receipts if r.status == "failed")
        contract = failure(
            "TOOL_ERROR",
            f"{bad.operation_id} ({bad.tool_name}) failed: node 'n9' not found",
            repair=[(bad.operation_id, "insert_precondition")],
        )
    return follow(
        cause,
        Executed,
        6.0,
        scene_id="s1",
        receipts=list(receipts),
        scene_hash="h",
        blend_path="var/scenes/s1.blend",
        failure=contract,
        message=contract.retry_hint if contract else "",
        revision=1,
        inspection="i1",
    )


def receipt(op_id: str, status: str = "succeeded") -> Receipt:
    return Receipt(
        operation_id=op_id, tool_name="gn.link", safety_level="safe_write", status=status
    )  # type: ignore[arg-type]


# -- the plan backend ---------------------------------------------------------------------


async def test_plan_backend_when_given_a_response_plans_its_compiled_operations() -> None:
    (planned,) = await handlers().on_requested(requested(plan=subdivide()))
    assert isinstance(planned, Planned) and planned.planner == "plan"
    assert planned.operation_set.request_id == "q1"
    assert planned.schedule == [f"step_1.0{i}" for i in range(1, 6)]
    assert planned.done is True


async def test_plan_backend_when_response_has_python_plans_it_as_its_last_operation() -> None:
    (planned,) = await handlers().on_requested(requested(plan=EXAMPLE_9))
    assert isinstance(planned, Planned)
    assert planned.schedule[-1] == "step_3.01"
    assert planned.operation_set.operations[-1].tool_name == "python.safe"


async def test_plan_backend_when_node_catalog_not_published_yet_retries() -> None:
    with pytest.raises(Retry, match="node catalog"):
        await handlers(nodes=None).on_requested(requested(plan=subdivide()))


async def test_plan_backend_when_mesh_has_no_gn_tools_refuses_without_waiting() -> None:
    _, failed = await planner(nodes=StaticNodes(None)).on_requested(requested(plan=subdivide()))
    assert isinstance(failed, RunFailed) and failed.failure.error_code == "TOOL_UNKNOWN"


async def test_rules_backend_when_reading_a_scatter_plans_gn_operations() -> None:
    (planned,) = await handlers().on_requested(requested("scatter 3 Rock on Ground"))
    assert isinstance(planned, Planned)
    assert planned.schedule[0] == "op01.01"
    assert {op.tool_name for op in planned.operation_set.operations} >= {"gn.add_node", "gn.link"}


async def test_plan_run_when_response_not_done_completes_once_executed() -> None:
    (planned,) = await handlers().on_requested(requested(plan={**subdivide(), "done": False}))
    assert isinstance(planned, Planned) and planned.done is False
    log = Log(requested(plan=subdivide()), planned)
    done = executed(planned, receipt("step_1.01"))
    gates = follow(
        done,
        GatesEvaluated,
        7.0,
        scene_id="s1",
        revision=1,
        guardians=[],
        result="{}",
        envelope=GateEnvelope(success=True),
    )
    log.events.append(done)
    (completed,) = await handlers(log=log).on_gates(gates)
    assert isinstance(completed, RunCompleted)


@pytest.mark.clause("004-§multi-step.3")
async def test_plan_run_when_step_3_fails_names_step_3_in_the_failure() -> None:
    (planned,) = await handlers().on_requested(requested(plan=subdivide()))
    assert isinstance(planned, Planned)
    outcome = executed(
        planned,
        receipt("step_1.01"),
        receipt("step_1.02"),
        receipt("step_1.03", "failed"),
        failed=True,
    )
    (failed,) = await handlers(log=Log()).on_executed(outcome)
    assert isinstance(failed, RunFailed)
    assert failed.failure.retry_hint.startswith("step step_1 failed: step_1.03 (gn.link) failed")
    assert failed.message.startswith("step step_1 failed: ")


def test_naming_step_when_operation_was_not_compiled_from_a_step_changes_nothing() -> None:
    contract = failure(
        "TOOL_ERROR", "op01 (object.create) failed: boom", repair=[("op01", "retry")]
    )
    assert naming_step(contract, "boom", [receipt("op01", "failed")]) == (contract, "boom")


def test_naming_step_when_no_receipt_failed_reads_the_repair_plan() -> None:
    contract = failure("ROLLBACK_FAILED", "x", repair=[("step_4.02", "retry")])
    named, text = naming_step(contract, "y", [])
    assert named.retry_hint == "step step_4 failed: x" and text == "step step_4 failed: y"


# -- the model ------------------------------------------------------------------------------


def geonodes_answer(response: dict[str, Any]) -> str:
    return json.dumps({"request_id": "x", "operations": [], GEONODES_FIELD: json.dumps(response)})


def test_decode_answer_when_geonodes_json_given_returns_the_response() -> None:
    raw = decode_answer(geonodes_answer(subdivide()), "q1")
    assert raw == subdivide()


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        ({"request_id": "x", GEONODES_FIELD: "{not json"}, "is not valid JSON"),
        ({"request_id": "x", GEONODES_FIELD: "[1]"}, "does not hold a Geometry Nodes response"),
        ({"request_id": "x", GEONODES_FIELD: 3}, "is not a string"),
        (
            {
                "request_id": "x",
                GEONODES_FIELD: json.dumps(subdivide()),
                "operations": [{"operation_id": "a"}],
            },
            "both operations and geonodes_json",
        ),
    ],
)
def test_decode_answer_when_geonodes_json_unusable_is_schema_invalid(
    answer: dict[str, Any], said: str
) -> None:
    with pytest.raises(PlanInvalid) as caught:
        decode_answer(json.dumps(answer), "q1")
    assert caught.value.failure.error_code == "SCHEMA_INVALID" and said in caught.value.message


def test_decode_answer_when_geonodes_json_empty_reads_the_operations() -> None:
    answer = {"request_id": "x", GEONODES_FIELD: "", "operations": []}
    assert decode_answer(json.dumps(answer), "q1") == {"request_id": "q1", "operations": []}


def test_response_schema_when_gn_available_allows_either_shape() -> None:
    schema = response_schema(GN_CATALOG, geonodes=True)
    assert schema["required"] == ["request_id"]
    assert schema["properties"][GEONODES_FIELD]["type"] == "string"
    assert "minItems" not in schema["properties"]["operations"]
    assert GEONODES_FIELD not in response_schema(GN_CATALOG)["properties"]


def test_prompt_when_nodes_known_describes_the_response_and_relevant_nodes() -> None:
    context = PlanContext(run_id="r1", request_id="q1", scene_id="s1", prompt="add noise texture")
    request = build_request(context, GN_CATALOG, None, [], nodes=NODES)
    assert GEONODES_FIELD in request.system and '"type":"PYTHON"' in request.system
    assert "ShaderNodeTexNoise" in request.system  # named by the request's words
    assert (
        'GeometryNodeSubdivisionSurface "Subdivision Surface" in: Mesh:GEOMETRY' in request.system
    )
    assert "Value [Value_001]:VALUE" in request.system  # Math's repeated names
    assert "Edge Crease:VALUE 0..1" in request.system
    assert GEONODES_FIELD in request.response_schema["properties"]
    plain = build_request(context, GN_CATALOG, None, [])
    assert GEONODES_FIELD not in plain.system


async def test_gemini_run_when_answering_a_response_plans_it() -> None:
    model = ScriptedModel(geonodes_answer(subdivide()))
    prompt = requested("subdivide the cube", planner="gemini")
    _, _, planned = await handlers(model=model, log=Log(prompt)).on_requested(prompt)
    assert isinstance(planned, Planned) and planned.planner == "gemini"
    assert planned.schedule[0] == "step_1.01" and planned.done is True


async def test_gemini_run_when_response_invalid_sends_the_refusal_back() -> None:
    bad = subdivide()
    bad["steps"][0]["payload"]["operations"][1]["socket"] = "Levle"
    model = ScriptedModel(geonodes_answer(bad), geonodes_answer(subdivide()))
    prompt = requested("subdivide the cube", planner="gemini")
    _, _, planned = await handlers(model=model, log=Log(prompt)).on_requested(prompt)
    assert isinstance(planned, Planned) and planned.iteration == 2
    repair = model.requests[1].contents[-1].text
    assert "did you mean 'Level'" in repair and "step step_1, operations[1]" in repair


@pytest.mark.clause("004-§multi-step.4", "004-§validation.4")
async def test_gemini_run_when_not_done_and_gates_pass_asks_for_the_rest() -> None:
    first = {**subdivide(), "done": False}
    second = {
        **subdivide(),
        "steps": [
            {
                "id": "step_2",
                "type": "GN_OPS",
                "payload": {
                    "v": 1,
                    "target": {"object_name": "Cube", "modifier_name": "GeometryNodes"},
                    "ops": [
                        {"op": "set_input", "node_id": "n1", "socket_name": "Level", "value": 3}
                    ],
                },
            }
        ],
    }
    model = ScriptedModel(geonodes_answer(first), geonodes_answer(second))
    prompt = requested("subdivide the cube", planner="gemini")
    log = Log(prompt)
    _, _, planned = await handlers(model=model, log=log).on_requested(prompt)
    assert isinstance(planned, Planned) and planned.done is False
    done = executed(planned, *(receipt(i) for i in planned.schedule))
    log.events += [planned, done]
    envelope = GateEnvelope(success=True)
    gates = follow(
        done,
        GatesEvaluated,
        7.0,
        scene_id="s1",
        revision=1,
        guardians=[],
        result="{}",
        envelope=envelope,
    )
    (again,) = await handlers(model=model, log=log).on_gates(gates)
    assert isinstance(again, Planned) and again.iteration == 2 and again.done is True
    asked = model.requests[1].contents[-1].text
    assert "You said done=false" in asked and "taken steps: step_1" in asked
    # The second answer is done: once it runs and passes, the run completes.
    finished = executed(again, *(receipt(i) for i in again.schedule))
    log.events += [again, finished]
    gates2 = follow(
        finished,
        GatesEvaluated,
        8.0,
        scene_id="s1",
        revision=2,
        guardians=[],
        result="{}",
        envelope=envelope,
    )
    completed, said = await handlers(model=model, log=log).on_gates(gates2)
    assert isinstance(completed, RunCompleted) and isinstance(said, ThreadMessage)


async def test_gemini_run_when_still_not_done_at_the_last_answer_completes() -> None:
    model = ScriptedModel()
    prompt = requested("subdivide the cube", planner="gemini")
    (planned,) = await handlers().on_requested(requested(plan={**subdivide(), "done": False}))
    assert isinstance(planned, Planned)
    last = follow(
        prompt,
        Planned,
        1.0,
        scene_id="s1",
        planner="gemini",
        operation_set=planned.operation_set,
        schedule=planned.schedule,
        catalog_version="test-gn",
        iteration=3,
        done=False,
    )
    done = executed(last, *(receipt(i) for i in last.schedule))
    log = Log(prompt, last, done)
    completed, said = await handlers(model=model, log=log).on_executed(
        follow(
            last,
            Executed,
            6.0,
            scene_id="s1",
            receipts=done.receipts,
            scene_hash="h",
            blend_path=None,
        )
    )
    assert isinstance(completed, RunCompleted)
    assert isinstance(said, ThreadMessage) and "not done after 3 answers" in said.text
    assert model.requests == []


def test_node_section_when_request_names_nothing_carries_the_core_set_only() -> None:
    text = node_section(NODES, "make it nicer")
    assert "GeometryNodeInstanceOnPoints" in text and "ShaderNodeTexNoise" not in text
    assert text.startswith("Geometry Nodes of Blender 5.0.1 (a part of 13:")


def test_node_section_when_over_its_cap_stops_there(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prompt_geonodes, "MAX_NODES", 2)
    text = node_section(NODES, "noise")
    assert len(text.splitlines()) == 3  # the heading and two nodes
