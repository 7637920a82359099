"""Planning with Gemini through the whole mesh: the real google-genai client, a local server.

The planner's SDK client is pointed at ``tests/support/gemini_fake.py`` with the base URL setting,
so every test runs offline; real nats-server, real bpy.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from contracts import tool_categories as found
from contracts.events import Planned
from contracts.fold import fold_run
from contracts.receipts import RunResult
from services.doors.cli.mesh import Mesh
from services.doors.core.cancels import cancel_run
from services.doors.core.client import MeshClient
from services.doors.core.requests import build_request
from services.executor.adapters.catalog import KvCatalog
from services.planner.threads import read_thread
from services.runtime.nats.history import read_run
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.gemini_fake import FakeGemini, answer, error, op, plan, running, safety_blocked
from tests.support.meshes import mesh_fixture

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

KEY = "test-key-0123456789"
PREFIX = "bmgemini"


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeGemini]:
    with running() as server, pytest.MonkeyPatch.context() as env:
        env.setenv("GEMINI_API_KEY", KEY)  # the SDK reads it; settings never hold it
        env.delenv("GOOGLE_API_KEY", raising=False)
        env.delenv("GOOGLE_GEMINI_BASE_URL", raising=False)
        yield server


@pytest.fixture(scope="module")
def mesh_settings(fake: FakeGemini, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(
        home=tmp_path_factory.mktemp("home"),
        prefix=PREFIX,
        user="ana",
        planner="gemini",
        env={"BLENDMESH_GEMINI_BASE_URL": fake.url, "BLENDMESH_GEMINI_MAX_RETRIES": "2"},
        # No picture is looked at here: a Blender rendering every commit would only
        # compete with the runs for the CPU, and a stop would wait for its last render.
        previews=False,
    )


mesh = mesh_fixture()


async def run(mesh: tuple[Mesh, Bus], scene: str, prompt: str, **kw: Any) -> RunResult:
    request = build_request(user="ana", scene_id=scene, prompt=prompt, planner="gemini", **kw)
    return await MeshClient(mesh[1]).run(request, timeout=120)


def create(name: str, op_id: str = "op01") -> dict[str, Any]:
    return op(op_id, "object.create", {"primitive": "cube", "name": name})


async def test_gemini_plan_when_valid_executes_and_names_planner_and_model(
    mesh: tuple[Mesh, Bus], fake: FakeGemini
) -> None:
    bevel = op("op02", "modifier.add", {"object": "Box", "type": "BEVEL"}, ["op01"])
    fake.script(plan(create("Box"), bevel))
    result = await run(mesh, "good", "add a cube named Box and bevel it")
    assert result.status == "completed", result
    assert (result.planner, result.model) == ("gemini", "gemini-2.5-flash")
    assert [r.tool_name for r in result.receipts] == ["object.create", "modifier.add"]
    (sent,) = fake.requests
    assert sent.api_key == KEY and sent.model == "gemini-2.5-flash"


TRUNCATED = answer('{"request_id": "x", "operations": [{"operation_id": ')
NO_TOOL = answer(json.dumps({"request_id": "x", "operations": [{"operation_id": "op01"}]}))
CYCLE = plan(op("a", "scene.snapshot", {}, ["b"]), op("b", "scene.snapshot", {}, ["a"]))
UNKNOWN = plan(op("op01", "python.exec", {"code": "print(1)"}))


@pytest.mark.parametrize(
    ("name", "bad", "code"),
    [
        ("malformed", TRUNCATED, "SCHEMA_INVALID"),
        ("schema", NO_TOOL, "SCHEMA_INVALID"),
        ("cycle", CYCLE, "GRAPH_CYCLE"),
        ("unknown_tool", UNKNOWN, "TOOL_UNKNOWN"),
    ],
)
async def test_gemini_plan_when_first_answer_invalid_second_executes(
    mesh: tuple[Mesh, Bus], fake: FakeGemini, name: str, bad: Any, code: str
) -> None:
    fake.script(bad, plan(create(f"Fixed_{name}")))
    result = await run(mesh, f"repair-{name}", f"add a cube named Fixed_{name}")
    assert result.status == "completed", result
    assert [r.status for r in result.receipts] == ["succeeded"]
    _, second = fake.requests
    assert f'"error_code":"{code}"' in second.turns[-1]
    assert "retry_hint" in second.turns[-1] and "minimal_repair_plan" in second.turns[-1]
    assert second.body["contents"][-2]["role"] == "model"
    events = await read_run(mesh[1].js, PREFIX, result.run_id)
    assert [e.iteration for e in events if isinstance(e, Planned)] == [2]


async def test_gemini_plan_when_three_answers_invalid_fails_with_last_contract(
    mesh: tuple[Mesh, Bus], fake: FakeGemini
) -> None:
    fake.script(
        answer("I cannot do that."),
        plan(op("a", "scene.snapshot", {}, ["a"])),
        plan(op("op01", "python.exec", {})),
        plan(create("Never")),
    )
    result = await run(mesh, "hopeless", "do something impossible")
    assert result.status == "failed" and result.receipts == []
    assert result.failure is not None and result.failure.error_code == "TOOL_UNKNOWN"
    assert result.failure.retry_hint.startswith("Use only registered tools")
    assert (result.planner, result.model) == ("gemini", "gemini-2.5-flash")
    assert len(fake.requests) == 3 and len(fake.replies) == 1


async def test_gemini_plan_when_rate_limited_once_retries_and_executes(
    mesh: tuple[Mesh, Bus], fake: FakeGemini
) -> None:
    fake.script(
        error(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted", retry_delay="0.2s"),
        plan(create("Patient")),
    )
    result = await run(mesh, "limited", "add a cube named Patient")
    assert result.status == "completed", result
    assert len(fake.requests) == 2 and fake.requests[0].body == fake.requests[1].body


async def test_gemini_plan_when_execution_fails_repair_plan_executes(
    mesh: tuple[Mesh, Bus], fake: FakeGemini
) -> None:
    ghost = op("op02", "object.transform", {"name": "Ghost", "location": [1, 2, 3]})
    fake.script(
        plan(create("Here"), ghost),
        plan(op("op03", "object.transform", {"name": "Here", "location": [1, 2, 3]})),
    )
    result = await run(mesh, "exec-repair", "add a cube named Here and move it to 1 2 3")
    assert result.status == "completed", result
    assert [(r.tool_name, r.status) for r in result.receipts] == [("object.transform", "succeeded")]
    repair = fake.requests[1].turns[-1]
    assert '"error_code":"TOOL_ERROR"' in repair and "Ghost" in repair
    assert '"name":"Here"' in repair  # the scene as it is after the first execution
    events = await read_run(mesh[1].js, PREFIX, result.run_id)
    assert [e.iteration for e in events if isinstance(e, Planned)] == [1, 2]


@pytest.mark.clause("002-§core-loop.5")
async def test_gemini_request_when_sent_carries_catalog_scene_and_thread(
    mesh: tuple[Mesh, Bus], fake: FakeGemini
) -> None:
    fake.script(plan(create("Pillar")))
    first = await run(mesh, "context", "add a cube named Pillar", thread_id="conv-1")
    assert first.status == "completed" and first.thread_id == "conv-1"
    fake.script(plan(op("op01", "object.transform", {"name": "Pillar", "scale": [1, 1, 3]})))
    second = await run(mesh, "context", "make it three times taller", thread_id="conv-1")
    assert second.status == "completed", second
    (sent,) = fake.requests
    catalog = await KvCatalog(mesh[1].js, PREFIX).get()
    assert catalog is not None
    # The core tools and the categories the request's words call for carry their schemas;
    # the others are named alone (ADR 0066).
    wanted = found.needed("make it three times taller")
    for tool in catalog.tools:
        schema = json.dumps(tool.input_schema, separators=(",", ":"), ensure_ascii=False)
        assert tool.name in sent.system
        shown = tool.name in found.CORE or found.category_of(tool.name) in wanted
        assert (f'"name":"{tool.name}"' in sent.system and schema in sent.system) == shown
    history, request = sent.turns[0], sent.turns[-1]
    assert history == "add a cube named Pillar"
    assert "Completed: 1 of 1 operations" in sent.turns[1] and "Pillar" in sent.turns[1]
    assert '"name":"Pillar"' in request and request.endswith("make it three times taller")
    messages = await read_thread(mesh[1].js, PREFIX, "conv-1")
    assert [(m.role, m.run_id) for m in messages] == [
        ("user", first.run_id),
        ("assistant", first.run_id),
        ("user", second.run_id),
        ("assistant", second.run_id),
    ]


@pytest.mark.clause("002-§core-loop.6", "002-§core-loop.4")
async def test_gemini_run_when_request_is_a_question_replies_in_words_and_changes_nothing(
    mesh: tuple[Mesh, Bus], fake: FakeGemini
) -> None:
    said = "There is nothing in this scene yet."
    fake.script(answer(json.dumps({"request_id": "x", "operations": [], "reply": said})))
    result = await run(mesh, "question", "what is in the scene?", thread_id="conv-q")
    assert result.status == "completed", result
    assert result.message == said and result.receipts == [] and result.blend_path is None
    events = await read_run(mesh[1].js, PREFIX, result.run_id)
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["RunRequested", "PlanningStarted", "Replied", "RunCompleted"], kinds
    messages = await read_thread(mesh[1].js, PREFIX, "conv-q")
    assert [(m.role, m.text) for m in messages] == [
        ("user", "what is in the scene?"),
        ("assistant", said),
    ]


@pytest.mark.clause("002-§core-loop.4", "002-§run-states.2")
async def test_gemini_run_when_model_is_slow_the_run_shows_planning_meanwhile(
    mesh: tuple[Mesh, Bus], fake: FakeGemini
) -> None:
    """The model is rate limited once (the SDK waits 1.5 s): the log says planning then."""
    fake.script(
        error(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted", retry_delay="1.5s"),
        plan(create("Slow")),
    )
    request = build_request(
        user="ana", scene_id="slow", prompt="add a cube named Slow", planner="gemini"
    )
    following = asyncio.create_task(MeshClient(mesh[1]).run(request, timeout=120))
    seen: list[str] = []  # the run's state each time it changed, as a client folds it
    waiting_on_model = False  # planning seen with no plan in the log yet
    while not following.done():
        events = await read_run(mesh[1].js, PREFIX, request.run_id)
        result = fold_run(events)
        if result is not None and (not seen or seen[-1] != result.status):
            seen.append(result.status)
        if result is not None and result.status == "planning":
            waiting_on_model |= not any(isinstance(e, Planned) for e in events)
        await asyncio.sleep(0.05)
    assert (await following).status == "completed"
    assert waiting_on_model, seen
    assert "queued" not in seen[seen.index("planning") :], seen


@pytest.mark.clause("002-§core-loop.10")
async def test_gemini_run_when_approval_requested_tells_the_thread_it_waits(
    mesh: tuple[Mesh, Bus], fake: FakeGemini
) -> None:
    fake.script(plan(create("Doomed")))
    made = await run(mesh, "asking", "add a cube named Doomed", thread_id="conv-a")
    assert made.status == "completed", made
    fake.script(plan(op("op01", "object.delete", {"name": "Doomed"}, level="destructive")))
    waiting = await run(mesh, "asking", "delete Doomed", thread_id="conv-a")
    assert waiting.status == "awaiting_confirmation", waiting
    for _ in range(100):  # the planner hears the approval request a moment after the client
        messages = await read_thread(mesh[1].js, PREFIX, "conv-a")
        if len(messages) == 4:
            break
        await asyncio.sleep(0.05)
    last = messages[-1]
    assert (last.role, last.run_id) == ("assistant", waiting.run_id)
    assert last.text.startswith("Waiting for your approval of op01 object.delete")


async def test_gemini_plan_when_answer_blocked_by_safety_fails_saying_so(
    mesh: tuple[Mesh, Bus], fake: FakeGemini
) -> None:
    fake.script(safety_blocked())
    result = await run(mesh, "blocked", "something the filters dislike")
    assert result.status == "failed"
    assert result.failure is not None and result.failure.error_code == "MODEL_ERROR"
    assert not result.failure.recoverable
    assert "blocked by safety filters (SAFETY)" in result.message
    assert len(fake.requests) == 1


async def test_gemini_logs_when_run_retries_hold_neither_prompt_nor_key(
    mesh: tuple[Mesh, Bus], fake: FakeGemini, caplog: pytest.LogCaptureFixture
) -> None:
    # Everything `blendmesh -v` shows, and the model path's debug output on top. (The
    # audit views store the prompt by design; aiosqlite's own DEBUG log echoes its SQL.)
    caplog.set_level(logging.INFO)
    for name in ("blendmesh", "google_genai", "httpx", "httpx2", "httpcore", "httpcore2"):
        caplog.set_level(logging.DEBUG, logger=name)
    prompt = "add a cube named Confidential_7f3a"
    fake.script(error(503, "UNAVAILABLE", "overloaded"), plan(create("Confidential_7f3a")))
    result = await run(mesh, "quiet", prompt)
    assert result.status == "completed", result
    assert "retry 1 of 2" in caplog.text  # the logs were captured
    assert "Confidential_7f3a" not in caplog.text and KEY not in caplog.text


async def test_gemini_run_when_cancelled_while_the_model_thinks_fails_and_plans_nothing(
    mesh: tuple[Mesh, Bus], fake: FakeGemini
) -> None:
    fake.script(plan(create("Late")))
    fake.hold = threading.Event()
    client = MeshClient(mesh[1])
    request = build_request(
        user="ana", scene_id="g_cancel", prompt="add a cube named Late", planner="gemini"
    )
    running = asyncio.ensure_future(client.run(request, timeout=120))
    try:
        for _ in range(600):  # until the model has the request
            if fake.requests:
                break
            await asyncio.sleep(0.05)
        assert fake.requests, "the model was never asked"
        view = await cancel_run(client, request.run_id, "ana", "too slow", timeout=60)
    finally:
        fake.hold.set()
        fake.hold = None
    assert view.result.failure is not None
    assert view.result.failure.error_code == "RUN_CANCELLED"
    assert (await running).status == "failed"
    events = await read_run(mesh[1].js, PREFIX, request.run_id)
    assert not [e for e in events if isinstance(e, Planned)]  # the model's answer was dropped
