"""The bus as a public API: clients that import nothing of blendmesh (one in Python, one
in TypeScript) log in as their user with its NKey, run a plan on a real mesh (real
nats-server, real bpy) through the bus door, follow it to its result and read its audit."""

from __future__ import annotations

import ast
import asyncio
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest
from nats.js.api import DeliverPolicy

from contracts import subjects
from contracts.events import RunRequested
from services.audit import client as audit
from services.doors.cli.main import main as blendmesh
from services.doors.cli.mesh import Mesh
from services.executor.client import SceneFiles
from services.runtime.nats.history import read_run
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.meshes import mesh_fixture

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module")]

EXAMPLES = Path(__file__).parents[2] / "examples"
TYPESCRIPT = EXAMPLES / "typescript"
NPM_CI = "npm ci --prefix examples/typescript"
PREFIX = "bmbus"
PLAN = {
    "request_id": "bus-example-1",
    "operations": [
        {
            "operation_id": "a",
            "tool_name": "object.create",
            "args": {"primitive": "plane", "name": "BusPlane"},
            "depends_on": [],
            "safety_level": "safe_write",
        }
    ],
}


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(home=tmp_path_factory.mktemp("home"), prefix=PREFIX, user="ana", previews=False)


mesh = mesh_fixture()


@pytest.fixture(scope="module")
def ana_login(mesh: tuple[Mesh, Bus], mesh_settings: Settings, tmp_path_factory: Any) -> Path:
    """Ana's login file, made as its README says: `blendmesh users add ana --new-key`."""
    running, _ = mesh
    login = tmp_path_factory.mktemp("logins") / "ana.json"
    home = ["--home", str(mesh_settings.home)]
    assert blendmesh([*home, "users", "add", "ana", "--new-key", str(login)]) == 0
    # This mesh runs inside the test, not as `blendmesh up` with BLENDMESH_PREFIX set,
    # so the command could not know either: the user would be told both.
    login.write_text(json.dumps(read_json(login) | {"url": running.url, "prefix": PREFIX}))
    return login


def read_json(path: Path) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(path.read_text())
    return found


async def run_example(
    *argv: str, env: dict[str, str] | None = None, timeout: float = 180.0
) -> tuple[int, list[dict[str, Any]], str]:
    """Run a process without blocking the loop the mesh runs on; its JSON lines."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    lines = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
    assert proc.returncode is not None
    return proc.returncode, lines, err.decode()


async def test_python_example_when_read_imports_nothing_of_blendmesh() -> None:
    tree = ast.parse((EXAMPLES / "python" / "follow_run.py").read_text())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {
        (node.module or "").split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
    }
    assert not imported & {"contracts", "services", "blendmesh", "tests"}
    assert "nats" in imported


async def check_run(
    bus: Bus, code: int, lines: list[dict[str, Any]], err: str, request_id: str, scene: str
) -> None:
    """The example completed the plan, saw the run's events in order and tailed exactly
    the audit records `blendmesh audit` shows for the run."""
    assert code == 0, (err, lines)
    (result,) = [line for line in lines if line["kind"] == "result"]
    assert result["status"] == "completed"
    completed = result["event"]
    assert completed["type"] == "run.completed" and completed["request_id"] == request_id
    assert completed["user"] == "ana"
    assert [r["status"] for r in completed["receipts"]] == ["succeeded"]
    assert completed["revision"] is not None and completed["scene_id"] == scene
    events = [line["type"] for line in lines if line["kind"] == "event"]
    assert events[0] == "run.requested" and events[-1] == "run.completed"
    detail = await audit.query_run(bus.nc, PREFIX, result["run_id"])
    tailed = [{k: v for k, v in r.items() if k != "kind"} for r in lines if r["kind"] == "audit"]
    assert tailed == [msgspec.to_builtins(r) for r in detail.audit_records]
    assert tailed[0]["operation_id"] == "a" and tailed[0]["input_hash"].startswith("sha256:")


async def test_python_example_when_run_on_a_mesh_gets_result_and_audit_records(
    mesh: tuple[Mesh, Bus], ana_login: Path, tmp_path: Path
) -> None:
    _, bus = mesh
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(PLAN))
    script = str(EXAMPLES / "python" / "follow_run.py")
    code, lines, err = await run_example(
        sys.executable, script, "--login", str(ana_login), "--scene", "busdemo",
        "--plan", str(plan),
    )  # fmt: skip
    await check_run(bus, code, lines, err, "bus-example-1", "busdemo")


async def test_python_example_when_seed_is_missing_says_where_to_give_it(
    mesh: tuple[Mesh, Bus], ana_login: Path, tmp_path: Path
) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(PLAN))
    without = tmp_path / "no-seed.json"
    doc = read_json(ana_login)
    del doc["seed"]
    without.write_text(json.dumps(doc))
    code, lines, err = await run_example(
        sys.executable, str(EXAMPLES / "python" / "follow_run.py"), "--login", str(without),
        "--scene", "busdemo", "--plan", str(plan), env={"BLENDMESH_NKEY_SEED": ""},
    )  # fmt: skip
    assert code != 0 and not lines
    assert "--seed-file or BLENDMESH_NKEY_SEED" in err


async def test_python_example_when_scene_is_another_users_is_refused_as_unknown(
    mesh: tuple[Mesh, Bus], ana_login: Path, tmp_path: Path
) -> None:
    _, bus = mesh
    await bus.publisher.publish(  # ben's first run makes busben his, even while it runs
        RunRequested(
            event_id=f"e-ben-{time.time_ns()}",
            at=time.time(),
            run_id=f"run-ben-{time.time_ns()}",
            request_id="req-ben",
            thread_id="thread-ben",
            user="ben",
            scene_id="busben",
            plan=PLAN,
            planner="plan",
        )
    )
    for _ in range(100):  # until ben's scene has its first revision
        if await SceneFiles(bus.js, PREFIX).owner("busben") == "ben":
            break
        await asyncio.sleep(0.2)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(PLAN))
    code, lines, err = await run_example(
        sys.executable, str(EXAMPLES / "python" / "follow_run.py"), "--login", str(ana_login),
        "--scene", "busben", "--plan", str(plan),
    )  # fmt: skip
    assert code == 2 and not lines
    assert "NOT_FOUND: no scene busben" in err


def typescript_tool(name: str) -> str:
    """A tool of the TypeScript example's packages; fails, saying how to install them."""
    tool = TYPESCRIPT / "node_modules" / ".bin" / name
    if not tool.exists():
        pytest.fail(f"the TypeScript example's packages are not installed: run `{NPM_CI}`")
    return str(tool)


async def test_typescript_example_when_read_imports_only_nats_and_node() -> None:
    source = (TYPESCRIPT / "follow_run.ts").read_text()
    imported = set(re.findall(r'from "([^"]+)"', source))
    assert imported == {"nats", "node:crypto", "node:fs", "node:util"}
    package = json.loads((TYPESCRIPT / "package.json").read_text())
    assert set(package["dependencies"]) == {"nats"}
    lock = json.loads((TYPESCRIPT / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/nats"]["version"] == package["dependencies"]["nats"]


async def test_typescript_example_when_type_checked_has_no_errors() -> None:
    code, _, err = await run_example(typescript_tool("tsc"), "--noEmit", "-p", str(TYPESCRIPT))
    assert code == 0, err


async def test_typescript_example_when_run_on_a_mesh_gets_result_and_audit_records(
    mesh: tuple[Mesh, Bus], ana_login: Path, tmp_path: Path
) -> None:
    _, bus = mesh
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({**PLAN, "request_id": "bus-example-ts"}))
    doc = read_json(ana_login)
    seed_file = tmp_path / "ana.nk"
    seed_file.write_text(doc.pop("seed"))
    login = tmp_path / "ana-no-seed.json"
    login.write_text(json.dumps(doc))
    code, lines, err = await run_example(
        typescript_tool("tsx"), str(TYPESCRIPT / "follow_run.ts"), "--login", str(login),
        "--scene", "busdemo-ts", "--plan", str(plan), "--seed-file", str(seed_file),
    )  # fmt: skip
    await check_run(bus, code, lines, err, "bus-example-ts", "busdemo-ts")


async def test_malformed_run_request_when_published_is_dead_lettered_and_run_fails(
    mesh: tuple[Mesh, Bus],
) -> None:
    _, bus = mesh
    run_id = f"run-bad-{int(time.time() * 1000)}"
    bad = {
        "type": "run.requested",
        "event_id": f"{run_id}-e",
        "at": time.time(),
        "run_id": run_id,
        "request_id": "req-bad",
        "thread_id": "thread-bad",
        "user": "ana",
        "scene_id": 42,  # not a string
    }
    sub = await bus.js.subscribe(
        subjects.run_events(PREFIX, run_id, "failed"),
        ordered_consumer=True,
        deliver_policy=DeliverPolicy.ALL,
        stream=subjects.stream_name(PREFIX),
    )
    try:
        await bus.js.publish(
            subjects.run_events(PREFIX, run_id, "requested"),
            json.dumps(bad).encode(),
            headers={"Nats-Msg-Id": bad["event_id"]},
        )
        failed = json.loads((await sub.next_msg(timeout=30)).data)
    finally:
        await sub.unsubscribe()
    assert failed["failure"]["error_code"] == "REQUEST_UNREADABLE"
    assert "scene_id" in failed["message"]
    assert (failed["user"], failed["request_id"], failed["thread_id"]) == (
        "ana",
        "req-bad",
        "thread-bad",
    )
    # Exactly one end, and the dead letter names the consumer and the reason.
    assert [type(e).__name__ for e in await read_run(bus.js, PREFIX, run_id)] == ["RunFailed"]
    letter = await bus.js.get_last_msg(
        subjects.stream_name(PREFIX), subjects.deadletter(PREFIX, "planner")
    )
    reason = json.loads(letter.data or b"{}")["reason"]
    assert "scene_id" in reason
