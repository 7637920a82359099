"""Runs that complete only when their gates pass (spec 004 §8), on the whole mesh.

A gates file with a small polygon budget makes the gates fail on demand: a subdivided cube
(24 faces) has more faces than it allows, a plain one (6) fewer. Real nats-server, real
bpy, the Gemini planner against its local stand-in.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest

from contracts.events import GatesEvaluated, Planned, RunCompleted
from contracts.receipts import RunResult
from services.doors.cli.mesh import Mesh
from services.doors.core.client import MeshClient
from services.doors.core.requests import build_request
from services.executor.client import KvCatalog
from services.planner.handlers import PlannerHandlers
from services.runtime.nats.history import read_run, run_kinds
from services.runtime.service.consumer_spec import Delivery
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.gemini_fake import FakeGemini, op, plan, running
from tests.support.meshes import mesh_fixture

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

PREFIX = "bmgates"
BUDGET = 20  # faces: a cube (6) passes, a cube subdivided once (24) does not
GATES = f"""[gates]
guardians = ["output_connected", "links_valid", "modifiers_evaluate", "polygon_budget"]
polygon_budget = {BUDGET}
"""


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeGemini]:
    with running() as server, pytest.MonkeyPatch.context() as env:
        env.setenv("GEMINI_API_KEY", "test-key-gates")
        env.delenv("GOOGLE_API_KEY", raising=False)
        env.delenv("GOOGLE_GEMINI_BASE_URL", raising=False)
        yield server


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory, fake: FakeGemini) -> Settings:
    home = tmp_path_factory.mktemp("home")
    gates = home.parent / "gates.toml"
    gates.write_text(GATES)
    env = {
        "BLENDMESH_GATES_FILE": str(gates),
        "BLENDMESH_GEMINI_BASE_URL": fake.url,
        "BLENDMESH_GEMINI_MAX_RETRIES": "0",
    }
    # No picture is looked at here: a Blender rendering every commit would only compete
    # with the runs for the CPU, and a stop would wait for its last render.
    return Settings(home=home, prefix=PREFIX, user="ana", env=env, previews=False)


mesh = mesh_fixture(client="test-gates")


def dense(name: str, levels: int = 1) -> list[dict[str, Any]]:
    return [
        op("op01", "object.create", {"primitive": "cube", "name": name}),
        op(
            "op02",
            "modifier.add",
            {"object": name, "type": "SUBSURF", "properties": {"levels": levels}},
            ["op01"],
        ),
    ]


async def run_plan(mesh: tuple[Mesh, Bus], scene: str, ops: list[dict[str, Any]]) -> RunResult:
    written = {"request_id": f"req-{scene}", "operations": ops}
    request = build_request(user="ana", scene_id=scene, plan=written, planner="plan")
    return await MeshClient(mesh[1]).run(request, timeout=120)


async def test_run_when_scene_within_its_gates_completes_with_gates_passed(
    mesh: tuple[Mesh, Bus],
) -> None:
    light = [op("op01", "object.create", {"primitive": "cube", "name": "Light"})]
    result = await run_plan(mesh, "light", light)
    assert result.status == "completed", result
    assert result.gates is not None and result.gates.success
    events = await read_run(mesh[1].js, PREFIX, result.run_id)
    (verdict,) = [e for e in events if isinstance(e, GatesEvaluated)]
    outcome = json.loads(verdict.result)
    assert outcome["ok"] is True and [g["guardian_id"] for g in outcome["guardians"]] == [
        "output_connected",
        "links_valid",
        "modifiers_evaluate",
        "polygon_budget",
    ]
    assert verdict.config.startswith("gates.toml@sha256:")


async def test_run_when_scene_breaks_a_gate_fails_gates_failed_rules_planner(
    mesh: tuple[Mesh, Bus],
) -> None:
    prompt = "add a cube named Dense, then add a subdivision modifier to Dense"
    request = build_request(user="ana", scene_id="heavy", prompt=prompt, planner="rules")
    result = await MeshClient(mesh[1]).run(request, timeout=120)
    assert result.status == "failed", result
    assert result.failure is not None and result.failure.error_code == "GATES_FAILED"
    assert result.failure.recoverable and "POLYGON_BUDGET" in result.failure.retry_hint
    assert result.gates is not None and result.gates.failed_gates == ["POLYGON_BUDGET"]
    assert result.blend_path  # the revision was committed; the gates judged it
    assert result.failure.minimal_repair_plan, result.failure  # the ops that made 'Dense'


async def test_plan_run_when_scene_breaks_a_gate_fails_gates_failed(
    mesh: tuple[Mesh, Bus],
) -> None:
    result = await run_plan(mesh, "heavy-plan", dense("Dense"))
    assert result.status == "failed" and result.failure is not None
    assert result.failure.error_code == "GATES_FAILED"


async def test_gemini_run_when_gates_fail_repairs_in_the_next_iteration(
    mesh: tuple[Mesh, Bus], fake: FakeGemini
) -> None:
    lighter = op("op03", "modifier.remove", {"object": "Dense", "name": "Subdivision"})
    fake.script(plan(*dense("Dense")), plan(lighter))
    request = build_request(
        user="ana", scene_id="repaired", prompt="a smooth cube named Dense", planner="gemini"
    )
    result = await MeshClient(mesh[1]).run(request, timeout=120)
    assert result.status == "completed", result
    assert result.gates is not None and result.gates.success
    _, second = fake.requests[-2:]
    assert '"failed_gates":["POLYGON_BUDGET"]' in second.turns[-1]
    events = await read_run(mesh[1].js, PREFIX, result.run_id)
    assert [e.iteration for e in events if isinstance(e, Planned)] == [1, 2]
    verdicts = [e.envelope.success for e in events if isinstance(e, GatesEvaluated)]
    assert verdicts == [False, True]


async def test_gated_run_when_planner_hears_it_again_gives_no_second_outcome(
    mesh: tuple[Mesh, Bus],
) -> None:
    light = [op("op01", "object.create", {"primitive": "cube", "name": "Again"})]
    result = await run_plan(mesh, "replayed", light)
    assert result.status == "completed", result
    bus = mesh[1]
    events = await read_run(bus.js, PREFIX, result.run_id)
    assert any(isinstance(e, GatesEvaluated) for e in events)
    # A planner whose consumer was recreated hears the whole run again, in log order: it
    # finishes a run from what it heard and asks the real log only whether the run ended.
    again = PlannerHandlers(
        catalog=KvCatalog(bus.js, PREFIX),
        history=partial(read_run, bus.js, PREFIX),
        kinds=partial(run_kinds, bus.js, PREFIX),
    )
    delivery = Delivery(stream_seq=0, num_delivered=1, subject="")
    assert [out for e in events for out in await again.handle(e, delivery)] == []
    after = await read_run(bus.js, PREFIX, result.run_id)
    assert [type(e) for e in after].count(RunCompleted) == 1
