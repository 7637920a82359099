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
from mcp.client.streamable_http import streamable_http_client
from nats.aio.client import Client

from contracts import subjects
from contracts.limits import DEFAULT_MAX_OPERATIONS
from contracts.queries import RunReply
from services.audit import client as audit
from services.doors.bus.handlers import MAX_REPLY_BYTES
from services.doors.cli import main as cli
from services.doors.cli.mesh import Mesh
from services.doors.core.client import MeshClient
from services.doors.core.requests import build_request
from services.doors.gateway.app import GatewayServer, create_app
from services.doors.gateway.auth import Tokens
from services.doors.mcp.door import AUDIT_PAGE_BYTES
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.big_plans import biggest_plan, op_ids
from tests.support.bus_logins import user_login
from tests.support.checked_session import CheckedSession
from tests.support.mcp_plans import structured
from tests.support.meshes import mesh_fixture
from tests.support.signing import register

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(600),
]

PREFIX = "bmbig"
USER = "ana"
TOKENS = {"tok-ana": "ana", "tok-zed": "zed"}


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(home=tmp_path_factory.mktemp("big"), prefix=PREFIX, user=USER, previews=False)


mesh = mesh_fixture(client="test-big-run")


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


@pytest.mark.parametrize("path", ["/api/runs/{r}", "/api/runs/{r}/audit"])
async def test_http_when_another_user_asks_for_the_big_run_answers_as_for_an_unknown_one(
    api: httpx.AsyncClient, big_run: str, path: str
) -> None:
    zed = {"Authorization": "Bearer tok-zed"}
    theirs = await api.get(path.format(r=big_run), headers=zed)
    nobody = await api.get(path.format(r="run-nobody-has"), headers=zed)
    assert theirs.status_code == nobody.status_code == 404
    assert theirs.text.replace(big_run, "<id>") == nobody.text.replace("run-nobody-has", "<id>")


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


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def ana_door(mesh: tuple[Mesh, Bus]) -> AsyncIterator[Client]:
    """ana's own NATS login, as a program on the bus door uses it."""
    nc = await user_login(mesh[0].url, register(mesh[0].settings.home, USER), USER)
    try:
        yield nc
    finally:
        await nc.close()


async def door(nc: Client, verb: str, body: dict[str, Any]) -> dict[str, Any]:
    reply = await nc.request(subjects.door_api(PREFIX, USER, verb), json.dumps(body).encode(), 30)
    answer: dict[str, Any] = json.loads(reply.data)
    return answer


async def test_bus_door_when_run_holds_max_operations_answers_its_records_in_pages(
    mesh: tuple[Mesh, Bus], ana_door: Client, big_run: str
) -> None:
    records: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None:
        page = await door(ana_door, "run.audit", {"run_id": big_run, "offset": offset})
        assert page["ok"], page
        assert len(json.dumps(page)) <= MAX_REPLY_BYTES + 64 * 1024
        records += page["records"]
        offset = page.get("next_offset")
        assert len(records) <= 2 * DEFAULT_MAX_OPERATIONS
    expected = await audit.query_run(mesh[1].nc, PREFIX, big_run)
    assert records == [msgspec.to_builtins(r) for r in expected.audit_records]
    tail = await door(ana_door, "run.audit", {"run_id": big_run, "offset": 400})
    assert tail["records"] == records[400:] and "next_offset" not in tail
    past = await door(ana_door, "run.audit", {"run_id": big_run, "offset": 100_000})
    assert past == {"ok": True, "run_id": big_run, "records": []}


@pytest.mark.parametrize("offset", [-1, 100_001, 10**30, "12", None])
async def test_bus_door_when_audit_offset_is_out_of_bounds_refuses_naming_it(
    ana_door: Client, big_run: str, offset: Any
) -> None:
    answer = await door(ana_door, "run.audit", {"run_id": big_run, "offset": offset})
    assert answer["ok"] is False and answer["error"]["code"] == "INVALID", answer
    assert "offset" in answer["error"]["message"], answer


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def mcp_url(mesh: tuple[Mesh, Bus]) -> AsyncIterator[str]:
    app = create_app(mesh[0].settings, mesh[1], Tokens(TOKENS), run_timeout=120)
    server = GatewayServer(app, port=0)
    url = await server.start()
    try:
        yield f"{url}/mcp"
    finally:
        await server.stop()


async def test_mcp_audit_when_run_holds_max_operations_answers_it_in_pages(
    mesh: tuple[Mesh, Bus], mcp_url: str, big_run: str
) -> None:
    headers = {"Authorization": "Bearer tok-ana"}
    trail: dict[str, list[Any]] = {"actions": [], "audit_records": [], "timeline": []}
    async with (
        httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30, read=120)) as http,
        streamable_http_client(mcp_url, http_client=http) as (read, write, _),
        CheckedSession(read, write) as session,
    ):
        await session.initialize()
        offset: int | None = 0
        answers = 0
        while offset is not None:
            answer = await session.call_tool("audit", {"run_id": big_run, "offset": offset})
            assert answer.isError is not True, answer.content[:1]
            page = structured(answer)
            rows = {view: page[view] for view in trail}
            held = sum(len(found) for found in rows.values())
            # A page holds one row at least (the run's execution, with every receipt, is
            # some 150 KB alone); more only within the bound, commas and brackets aside.
            assert held == 1 or len(msgspec.json.encode(rows)) <= AUDIT_PAGE_BYTES + held + 64
            for view, found in rows.items():
                trail[view] += found
            assert page["offset"] == offset and page["run"]["run_id"] == big_run
            offset = page["next_offset"]
            answers += 1
            assert answers < 100
        for bad in (-1, 100_001, "3"):
            refused = await session.call_tool("audit", {"run_id": big_run, "offset": bad})
            assert refused.isError is True
            assert "offset" in structured(refused)["error"]["message"], refused.content
    assert answers > 5  # each page is a part a host can read
    whole = await audit.query_run(mesh[1].nc, PREFIX, big_run)
    assert [a["operation_id"] for a in trail["actions"]] == op_ids()
    assert trail["audit_records"] == [msgspec.to_builtins(r) for r in whole.audit_records]
    assert [t["stream_seq"] for t in trail["timeline"]] == [t.stream_seq for t in whole.timeline]


async def test_run_pages_when_asked_a_few_rows_at_a_time_add_up_to_the_whole_run(
    mesh: tuple[Mesh, Bus], big_run: str
) -> None:
    nc = mesh[1].nc
    whole = await audit.query_run(nc, PREFIX, big_run)
    detail, page = await audit.query_run_page(nc, PREFIX, big_run, limit=700)
    parts = [detail]
    while page.next_offset is not None:
        assert page.next_offset - page.offset <= 700
        detail, page = await audit.query_run_page(
            nc, PREFIX, big_run, page.next_offset, limit=700, upto_seq=page.upto_seq
        )
        parts.append(detail)
    assert len(parts) >= 3
    assert [a for p in parts for a in p.actions] == whole.actions
    assert [r for p in parts for r in p.audit_records] == whole.audit_records
    assert [t for p in parts for t in p.timeline] == whole.timeline


HOSTILE_PAGES: tuple[tuple[dict[str, Any], str], ...] = (
    ({"offset": -1}, "offset"),
    ({"offset": 100_001}, "offset"),
    ({"offset": 10**30}, "offset"),
    ({"offset": "0"}, "offset"),
    ({"limit": 0}, "limit"),
    ({"limit": 2001}, "limit"),
    ({"limit": -5}, "limit"),
    ({"upto_seq": -1}, "upto_seq"),
    ({"upto_seq": 2**64}, "upto_seq"),
    ({"run_id": "r" * 129}, "run_id"),
    ({"rows": 5}, "rows"),
)


@pytest.mark.parametrize(("fields", "named"), HOSTILE_PAGES)
async def test_run_query_when_page_is_out_of_bounds_answers_an_error_naming_the_field(
    mesh: tuple[Mesh, Bus], big_run: str, fields: dict[str, Any], named: str
) -> None:
    body = json.dumps({"run_id": big_run} | fields).encode()
    reply = await mesh[1].nc.request(subjects.query(PREFIX, "run"), body, timeout=10)
    answer = json.loads(reply.data)
    assert answer["ok"] is False, str(answer)[:300]
    assert "malformed run query" in answer["error"] and named in answer["error"], answer


@pytest.mark.parametrize(
    ("offset", "limit", "named"), [(-1, 10, "offset"), (100_001, 10, "offset"), (0, 0, "limit")]
)
async def test_audit_client_when_page_is_out_of_bounds_says_which_before_asking(
    mesh: tuple[Mesh, Bus], offset: int, limit: int, named: str
) -> None:
    with pytest.raises(audit.AuditError, match=f"{named}.*offset goes from 0 to 100,000"):
        await audit.query_run_page(mesh[1].nc, PREFIX, "run-any", offset, limit=limit)


async def test_audit_client_when_run_is_unknown_answers_no_run_on_every_page(
    mesh: tuple[Mesh, Bus], big_run: str
) -> None:
    nc = mesh[1].nc
    for offset in (0, 1500):
        with pytest.raises(audit.AuditError, match="no run run-nobody-has"):
            await audit.query_run_page(nc, PREFIX, "run-nobody-has", offset, upto_seq=5)


async def test_audit_client_when_run_is_under_way_reads_one_state_of_it(
    mesh: tuple[Mesh, Bus], big_run: str
) -> None:
    """Read again and again while a second run of as many operations goes on: each view
    put together from pages is one state of the run, its actions agreeing with its
    timeline."""
    plan = biggest_plan("req-aisle-2")
    request = build_request(user=USER, scene_id="aisle2", plan=plan, planner="plan")
    running = asyncio.ensure_future(MeshClient(mesh[1]).run(request, timeout=480))
    seen: list[str | None] = []
    try:
        while not running.done():
            try:
                detail = await audit.query_run(mesh[1].nc, PREFIX, request.run_id)
            except audit.AuditError as exc:
                assert "no run" in str(exc)  # not in the views yet
                await asyncio.sleep(0.05)
                continue
            seen.append(detail.run.state)
            done = sum(a.state == "completed" for a in detail.actions)
            succeeded = [t for t in detail.timeline if t.type == "run.op_succeeded"]
            assert done == len(succeeded), (done, len(succeeded))
            assert detail.timeline[-1].at == detail.run.updated_at
        assert (await running).status == "completed"
    finally:
        running.cancel()
    assert any(state != "completed" for state in seen), seen
