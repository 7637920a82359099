"""The red team's findings replayed on a real mesh: gateway, planner, bridge catalog, home.

One mesh serves the module: a body over the limit is refused before authentication
(C), plans over the operation limit or carrying unusable numbers and names are refused at
the gateway (A, B, E), a plan that skips the doors is still failed by the planner instead
of sticking, tool arguments over their caps never run (D), and the home the mesh made is
owner-only all the way down (G).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import pytest_asyncio

from contracts.events import RunRequested, derive_event_id
from contracts.receipts import RunResult
from services.doors.cli.mesh import Mesh
from services.doors.core.client import MeshClient
from services.doors.core.requests import build_request
from services.doors.gateway.app import create_app
from services.doors.gateway.auth import Tokens
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.meshes import mesh_fixture

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(240),
]

MAX_BODY = 256 * 1024
ANA = {"Authorization": "Bearer tok-ana"}
JSON = {"Content-Type": "application/json"}
HUGE_INT = "9" * 400


@pytest.fixture(scope="module")
def _keep_umask() -> Iterator[None]:
    before = os.umask(0o022)
    os.umask(before)
    try:
        yield
    finally:
        os.umask(before)


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory, _keep_umask: None) -> Settings:
    home = tmp_path_factory.mktemp("security") / "fresh" / "var"
    return Settings(home=home, prefix="bmsec", user="ana", max_body_bytes=MAX_BODY, previews=False)


mesh = mesh_fixture(client="test-security")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def api(mesh: tuple[Mesh, Bus]) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(mesh[0].settings, mesh[1], Tokens({"tok-ana": "ana"}), run_timeout=120)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
        yield client


def operation(op_id: str, tool: str = "object.create", **args: Any) -> dict[str, Any]:
    return {
        "operation_id": op_id,
        "tool_name": tool,
        "args": args or {"primitive": "cube", "name": f"C{op_id}"},
        "depends_on": [],
        "safety_level": "safe_write",
    }


def plan_text(*ops: dict[str, Any], request_id: str = "sec") -> str:
    return json.dumps({"request_id": request_id, "operations": list(ops)})


def error(response: httpx.Response) -> dict[str, str]:
    found: dict[str, str] = response.json()["error"]
    return found


async def run_plan(
    mesh: tuple[Mesh, Bus], plan: Any, scene: str, prompt: str | None = None
) -> RunResult:
    """Submit straight to the log, past the doors' checks, as a buggy client could."""
    run_id = f"run-{scene}"
    request = RunRequested(
        event_id=derive_event_id(run_id, "run.requested"),
        at=0.0,
        run_id=run_id,
        request_id=f"req-{scene}",
        thread_id=f"thread-{scene}",
        user="ana",
        scene_id=scene,
        prompt=prompt,
        plan=plan,
    )
    return await MeshClient(mesh[1]).run(request, timeout=90)


# -- C: the body limit comes before parsing and authentication -------------------------


async def test_gateway_when_body_over_limit_answers_413_before_authentication(
    api: httpx.AsyncClient,
) -> None:
    response = await api.post("/api/agent/run", content=b"{" * (MAX_BODY + 1), headers=JSON)
    assert response.status_code == 413, response.text
    assert f"{MAX_BODY} bytes" in error(response)["message"]


async def test_gateway_when_chunked_body_over_limit_answers_413(api: httpx.AsyncClient) -> None:
    async def body() -> AsyncIterator[bytes]:
        for _ in range(MAX_BODY // 4096 + 2):
            yield b" " * 4096

    response = await api.post("/api/agent/run", content=body(), headers=JSON)
    assert response.status_code == 413, response.text


async def test_openapi_when_read_documents_413_on_body_routes(api: httpx.AsyncClient) -> None:
    paths = (await api.get("/openapi.json")).json()["paths"]
    for path in ("/api/agent/run", "/api/agent/run/stream", "/api/agent/approvals/resolve"):
        assert "413" in paths[path]["post"]["responses"], path


# -- A, B, E at the gateway --------------------------------------------------------------


async def test_gateway_when_plan_over_max_operations_answers_413_naming_limit(
    api: httpx.AsyncClient,
) -> None:
    plan = plan_text(*(operation(f"op{i}") for i in range(501)))
    body = f'{{"sceneId": "sec_many", "plan": {plan}}}'
    response = await api.post("/api/agent/run", content=body, headers={**ANA, **JSON})
    assert response.status_code == 413, response.text
    message = error(response)["message"]
    assert "501 operations" in message and "BLENDMESH_MAX_OPERATIONS" in message


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ("NaN", "argument 'location[1]' is not a finite number"),
        ("1e400", "argument 'location[1]' is not a finite number"),
        (HUGE_INT, "argument 'location[1]' is too large"),
    ],
)
async def test_gateway_when_number_unusable_answers_422_naming_argument(
    api: httpx.AsyncClient, value: str, named: str
) -> None:
    plan = plan_text(operation("op1", primitive="cube", location=[0, 0, 0]))
    plan = plan.replace("[0, 0, 0]", f"[0, {value}, 0]")
    body = f'{{"sceneId": "sec_nan", "plan": {plan}}}'
    response = await api.post("/api/agent/run", content=body, headers={**ANA, **JSON})
    assert response.status_code == 422, response.text
    assert named in error(response)["message"]


async def test_gateway_when_name_has_nul_answers_422(api: httpx.AsyncClient) -> None:
    body = {"sceneId": "sec_nul", "plan": json.loads(plan_text(operation("op1", name="A\x00B")))}
    response = await api.post("/api/agent/run", json=body, headers=ANA)
    assert response.status_code == 422, response.text
    assert "argument 'name' contains a control character (U+0000)" in error(response)["message"]


@pytest.mark.parametrize("depth", [100, 5000])
async def test_gateway_when_plan_nested_deep_answers_4xx(
    api: httpx.AsyncClient, depth: int
) -> None:
    deep = "[" * depth + "]" * depth
    body = f'{{"sceneId": "sec_deep", "plan": {{"request_id": "r", "operations": {deep}}}}}'
    response = await api.post("/api/agent/run", content=body, headers={**ANA, **JSON})
    assert response.status_code == (422 if depth == 100 else 400), response.text
    assert error(response)["type"] == "ValidationError"


# -- past the doors, the planner still fails the run (never stuck in planning) ---------


async def test_run_when_plan_skips_doors_with_400_digit_int_fails_args_invalid(
    mesh: tuple[Mesh, Bus],
) -> None:
    plan = json.loads(plan_text(operation("op1", primitive="cube", location=[0, 0, 0])))
    plan["operations"][0]["args"]["location"][0] = int(HUGE_INT)
    result = await run_plan(mesh, plan, "sec_huge")
    assert result.status == "failed" and result.failure is not None
    assert result.failure.error_code == "ARGS_INVALID"
    assert "'location[0]' is too large" in result.message
    assert not result.receipts


async def test_run_when_plan_skips_doors_with_too_many_operations_fails_fast(
    mesh: tuple[Mesh, Bus],
) -> None:
    plan = json.loads(plan_text(*(operation(f"op{i}") for i in range(501))))
    result = await run_plan(mesh, plan, "sec_many_direct")
    assert result.status == "failed" and result.failure is not None
    assert result.failure.error_code == "SCHEMA_INVALID"
    assert "BLENDMESH_MAX_OPERATIONS" in result.message and not result.receipts


# -- D: tool arguments over their caps never reach Blender -----------------------------


@pytest.mark.parametrize(
    ("modifier", "prop", "value"),
    [
        ("ARRAY", "count", 200_000),
        ("SUBSURF", "levels", 11),
        ("SUBSURF", "render_levels", 7),
        ("BEVEL", "segments", 101),
        ("SCREW", "steps", 257),
        ("REMESH", "octree_depth", 11),
    ],
)
async def test_run_when_modifier_property_over_cap_fails_args_invalid_before_running(
    mesh: tuple[Mesh, Bus], modifier: str, prop: str, value: int
) -> None:
    scene = f"sec_cap_{prop}"
    plan = json.loads(
        plan_text(
            operation("op1"),
            operation(
                "op2", "modifier.add", object="Cop1", type=modifier, properties={prop: value}
            ),
            request_id=scene,
        )
    )
    plan["operations"][1]["depends_on"] = ["op1"]
    result = await run_plan(mesh, plan, scene)
    assert result.status == "failed" and result.failure is not None
    assert result.failure.error_code == "ARGS_INVALID"
    assert f"properties/{prop}" in result.message and "maximum" in result.message
    assert not result.receipts


async def test_run_when_rules_prompt_asks_subdivision_level_11_fails_args_invalid(
    mesh: tuple[Mesh, Bus],
) -> None:
    prompt = "add a cube named Sub, add a subdivision modifier to Sub with levels 11"
    result = await run_plan(mesh, None, "sec_subsurf", prompt=prompt)
    assert result.failure is not None and result.failure.error_code == "ARGS_INVALID"
    assert not result.receipts


# -- G: everything in the home is owner-only -------------------------------------------


async def test_home_when_a_run_committed_every_path_in_it_is_owner_only(
    mesh: tuple[Mesh, Bus],
) -> None:
    request = build_request(user="ana", scene_id="sec_home", prompt="add a cube named Home")
    result = await MeshClient(mesh[1]).run(request, timeout=90)
    assert result.status == "completed", result
    home = mesh[0].settings.home
    assert (home / "audit.sqlite3").exists() and result.blend_path is not None
    paths = [home, home.parent, *home.rglob("*")]
    assert len(paths) > 10
    open_to_others: dict[str, str] = {}
    for p in paths:
        try:
            mode = p.lstat().st_mode
        except FileNotFoundError:
            continue  # gone since listed (nats-server renames its .tmp files): open to no one
        if not stat.S_ISLNK(mode) and stat.S_IMODE(mode) & 0o077:
            open_to_others[str(p.relative_to(home.parent))] = oct(stat.S_IMODE(mode))
    assert open_to_others == {}
