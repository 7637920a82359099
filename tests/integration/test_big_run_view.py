"""A run of the most operations a plan may hold is read whole on every door (real
nats-server, real bpy, the audit views in SQLite).

The audit service's answer to a run of 450 operations was about 1.14 MB, more than one
NATS message holds, so the CLI, the HTTP run page, the MCP ``audit`` tool and the bus
door's ``run.audit`` all failed for it. The run detail now travels in pages that each fit
one message (ADR 0076); these tests run a plan of ``DEFAULT_MAX_OPERATIONS`` operations
and read it back through each door.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import msgspec
import pytest
import pytest_asyncio

from contracts.limits import DEFAULT_MAX_OPERATIONS
from contracts.queries import RunReply
from services.audit import client as audit
from services.doors.cli import main as cli
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
    pytest.mark.timeout(600),
]

PREFIX = "bmbig"
USER = "ana"
TOKENS = {"tok-ana": "ana", "tok-zed": "zed"}
SHAPES = ("cube", "cylinder", "uv_sphere", "cone")
STEPS = 4  # operations per crate: create, move, bevel, paint


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(home=tmp_path_factory.mktemp("big"), prefix=PREFIX, user=USER, previews=False)


mesh = mesh_fixture(client="test-big-run")


def crate(i: int) -> list[dict[str, Any]]:
    """One crate of a warehouse aisle: created, placed, bevelled and painted, as a person
    laying out a scene asks for it."""
    name = f"Crate_{i:03d}"
    row, col = divmod(i, 25)
    made = f"make_{i:03d}"

    def op(step: str, tool: str, args: dict[str, Any], after: list[str]) -> dict[str, Any]:
        return {
            "operation_id": f"{step}_{i:03d}",
            "tool_name": tool,
            "args": args,
            "depends_on": after,
            "safety_level": "safe_write",
        }

    return [
        op(
            "make",
            "object.create",
            {
                "primitive": SHAPES[i % len(SHAPES)],
                "name": name,
                "location": [col * 2.5, row * 3.0, 0.0],
                "rotation": [0.0, 0.0, (i * 15) % 360],
            },
            [],
        ),
        op(
            "move",
            "object.transform",
            {"name": name, "location": [col * 2.5, row * 3.0, 0.5], "scale": [1.0, 0.8, 1.0]},
            [made],
        ),
        op(
            "bevel",
            "modifier.add",
            {"object": name, "type": "BEVEL", "properties": {"segments": 2, "width": 0.05}},
            [made],
        ),
        op(
            "paint",
            "material.assign",
            {
                "object": name,
                "base_color": [0.35 + (i % 5) * 0.1, 0.25, 0.12],
                "roughness": 0.6,
            },
            [made],
        ),
    ]


def biggest_plan() -> dict[str, Any]:
    ops = [op for i in range(DEFAULT_MAX_OPERATIONS // STEPS) for op in crate(i)]
    assert len(ops) == DEFAULT_MAX_OPERATIONS
    return {"request_id": "req-aisle", "operations": ops}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def big_run(mesh: tuple[Mesh, Bus]) -> str:
    """The id of a completed run of the most operations one plan may hold."""
    request = build_request(user=USER, scene_id="aisle", plan=biggest_plan(), planner="plan")
    result = await MeshClient(mesh[1]).run(request, timeout=480)
    assert result.status == "completed", (result.failure, result.message)
    assert len(result.receipts) == DEFAULT_MAX_OPERATIONS
    return request.run_id


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def api(mesh: tuple[Mesh, Bus]) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(mesh[0].settings, mesh[1], Tokens(TOKENS), run_timeout=120)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://gateway", timeout=60
    ) as client:
        yield client


def op_ids() -> list[str]:
    return sorted(op["operation_id"] for op in biggest_plan()["operations"])


async def test_audit_client_when_run_holds_max_operations_reads_whole_detail(
    mesh: tuple[Mesh, Bus], big_run: str
) -> None:
    bus = mesh[1]
    detail = await audit.query_run(bus.nc, PREFIX, big_run)
    assert detail.run.state == "completed"
    assert [a.operation_id for a in detail.actions] == op_ids()
    assert {a.state for a in detail.actions} == {"completed"}
    executed = [r for r in detail.audit_records if r.status == "succeeded"]
    assert sorted(r.operation_id for r in executed) == op_ids()
    seqs = [t.stream_seq for t in detail.timeline]
    assert seqs == sorted(set(seqs)), "pages overlapped or came out of order"
    assert [t.type for t in detail.timeline].count("run.op_succeeded") == DEFAULT_MAX_OPERATIONS
    # The whole view is more than one message holds: it came in pages.
    whole = msgspec.json.encode(RunReply(ok=True, detail=detail))
    assert len(whole) > bus.nc.max_payload, len(whole)


async def test_http_when_run_holds_max_operations_answers_whole_detail_and_audit(
    api: httpx.AsyncClient, big_run: str
) -> None:
    shown = await api.get(f"/api/runs/{big_run}", headers={"Authorization": "Bearer tok-ana"})
    assert shown.status_code == 200, shown.text[:500]
    body = shown.json()
    assert sorted(op["operationId"] for op in body["operations"]) == op_ids()
    assert body["run"]["status"] == "completed"
    trail = await api.get(f"/api/runs/{big_run}/audit", headers={"Authorization": "Bearer tok-ana"})
    assert trail.status_code == 200, trail.text[:500]
    records = trail.json()["records"]
    assert len({r["operationId"] for r in records}) == DEFAULT_MAX_OPERATIONS + 1  # + gates


async def test_cli_when_run_holds_max_operations_shows_audit_and_timeline(
    mesh: tuple[Mesh, Bus],
    big_run: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("NATS_URL", mesh[0].url)
    monkeypatch.setenv("BLENDMESH_PREFIX", PREFIX)
    monkeypatch.setenv("BLENDMESH_USER", USER)
    monkeypatch.setenv("COLUMNS", "400")
    home = str(mesh[0].settings.home)
    began = time.monotonic()
    code = await asyncio.to_thread(cli.main, ["--home", home, "audit", big_run])
    said = capsys.readouterr()
    assert code == 0, said.err
    assert "paint_124" in said.out and "make_000" in said.out
    code = await asyncio.to_thread(cli.main, ["--home", home, "runs", "show", big_run, "--json"])
    said = capsys.readouterr()
    assert code == 0, said.err
    account = json.loads(said.out)
    assert sorted(op["operation_id"] for op in account["operations"]) == op_ids()
    assert account["revision"] is not None
    assert time.monotonic() - began < 60
