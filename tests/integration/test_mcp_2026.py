"""MCP 2026-07-28 at ``/mcp`` beside 2025-11-25, on a real mesh and real Blender: each
request stands alone, an approval is a Multi Round-Trip Request whose signed
``requestState`` the retry brings back with the person's answer, and a forged, altered,
replayed or another user's state is refused while the run keeps waiting."""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import logging
import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_types import methods as wire
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from services.runtime.service import tracing
from services.runtime.service.settings import Settings
from tests.support.asset_files import glb
from tests.support.gateways import gateway_fixture
from tests.support.mcp_plans import create, delete
from tests.support.meshes import mesh_fixture

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

TOKENS = {"tok-ana": "ana", "tok-ben": "ben"}
ANA, BEN = ({"Authorization": f"Bearer {t}"} for t in TOKENS)
VERSION = "2026-07-28"
FORMS: dict[str, Any] = {"elicitation": {"form": {}}}
ids = itertools.count(1)
ROOT = Path(__file__).resolve().parents[2]
# The official SDK's 2.x client lives in an environment of its own (ADR 0055).
MCP2_PYTHON = Path(os.environ.get("BLENDMESH_MCP2_PYTHON", ROOT / ".venv-mcp2" / "bin" / "python"))
HAS_MCP2 = MCP2_PYTHON.exists()


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    home = tmp_path_factory.mktemp("home")
    return Settings(home=home, prefix="bm2026", user="local", previews=False)


mesh = mesh_fixture(client="test-mcp-2026")
gateway = gateway_fixture(TOKENS)


@pytest_asyncio.fixture(loop_scope="module")
async def http(gateway: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=gateway, timeout=httpx.Timeout(30, read=300)) as client:
        yield client


def meta(capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientInfo": {"name": "wire-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
    }


async def post(
    http: httpx.AsyncClient,
    method: str,
    params: dict[str, Any],
    *,
    who: dict[str, str] = ANA,
    capabilities: dict[str, Any] | None = None,
    version: str = VERSION,
    headers: dict[str, str] | None = None,
    body_meta: dict[str, Any] | None = None,
) -> httpx.Response:
    body = {
        "jsonrpc": "2.0",
        "id": next(ids),
        "method": method,
        "params": {**params, "_meta": meta(capabilities) if body_meta is None else body_meta},
    }
    sent = {
        **who,
        "MCP-Protocol-Version": version,
        "Mcp-Method": method,
        "Accept": "application/json, text/event-stream",
    }
    if "name" in params or "uri" in params:
        sent["Mcp-Name"] = params.get("name") or params["uri"]
    headers = {**sent, **(headers or {})}
    return await http.post("/mcp", json=body, headers=headers)


def result(response: httpx.Response, method: str = "tools/call") -> dict[str, Any]:
    """The response's result, checked against the revision's schema for ``method``."""
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()["result"]
    wire.validate_server_result(method, VERSION, answer)
    return answer


async def call(
    http: httpx.AsyncClient, name: str, arguments: dict[str, Any], **kw: Any
) -> httpx.Response:
    return await post(http, "tools/call", {"name": name, "arguments": arguments}, **kw)


async def waiting(http: httpx.AsyncClient, scene: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``scene`` with a Box in it, and the arguments and answer of a run that waits for a
    person to delete it (asked by MRTR: the client declares forms)."""
    made = result(await call(http, "run", {"scene_id": scene, "plan": create("Box")}))
    assert made["resultType"] == "complete" and not made.get("isError"), made
    arguments = {"scene_id": scene, "plan": delete("Box")}
    asked = result(await call(http, "run", arguments, capabilities=FORMS))
    return arguments, asked


async def status(http: httpx.AsyncClient, run_id: str) -> str:
    answer = result(await call(http, "run_status", {"run_id": run_id}))
    return str(answer["structuredContent"]["status"])


def retry(arguments: dict[str, Any], state: Any, action: str = "accept") -> dict[str, Any]:
    return {
        "name": "run",
        "arguments": arguments,
        "requestState": state,
        "inputResponses": {"approval": {"action": action, "content": {"approve": True}}},
    }


async def test_discover_and_lists_answer_without_a_session(http: httpx.AsyncClient) -> None:
    found = result(await post(http, "server/discover", {}), "server/discover")
    listed = result(await post(http, "tools/list", {}), "tools/list")
    missing = await post(http, "resources/read", {"uri": "blendmesh://scenes/nobody-has"})
    assert found["supportedVersions"] == [VERSION] and "tools" in found["capabilities"]
    assert {"run", "cancel_run", "import_asset"} <= {t["name"] for t in listed["tools"]}
    assert "answer_approval" not in {t["name"] for t in listed["tools"]}  # no Apps declared
    assert listed["ttlMs"] >= 0 and listed["cacheScope"] == "private"
    assert "mcp-session-id" not in {k.lower() for k in missing.headers}
    assert missing.status_code == 400 and missing.json()["error"]["code"] == -32602


async def test_same_server_still_speaks_2025_11_25(gateway: str) -> None:
    async with (
        httpx.AsyncClient(headers=ANA, timeout=30) as client,
        streamable_http_client(f"{gateway}/mcp", http_client=client) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        started = await session.initialize()
        listed = await session.list_tools()
    assert started.protocolVersion == "2025-11-25"
    assert "run" in {t.name for t in listed.tools}


async def test_waiting_run_asks_by_mrtr_and_the_retry_approves_it(
    http: httpx.AsyncClient,
) -> None:
    arguments, asked = await waiting(http, "mrtr-ok")
    assert asked["resultType"] == "input_required", asked
    form = asked["inputRequests"]["approval"]
    assert form["method"] == "elicitation/create" and form["params"]["mode"] == "form"
    assert "object.delete" in form["params"]["message"]
    run_id = asked["_meta"]["blendmesh/run_id"]
    assert await status(http, run_id) == "awaiting_confirmation"
    done = result(
        await post(http, "tools/call", retry(arguments, asked["requestState"]), capabilities=FORMS)
    )
    assert done["resultType"] == "complete", done
    assert done["structuredContent"]["status"] == "completed", done
    assert done["structuredContent"]["run_id"] == run_id
    # Replayed once the approval is answered: the mesh resolves an approval once.
    again = result(await post(http, "tools/call", retry(arguments, asked["requestState"])))
    assert again["isError"] is True
    assert "no longer waits on this approval" in again["structuredContent"]["error"]["message"]


async def test_declined_form_rejects_the_run(http: httpx.AsyncClient) -> None:
    arguments, asked = await waiting(http, "mrtr-no")
    answer = result(
        await post(http, "tools/call", retry(arguments, asked["requestState"], "decline"))
    )
    assert answer["structuredContent"]["failure"]["error_code"] == "APPROVAL_REJECTED"


async def test_forged_altered_replayed_or_other_users_state_is_refused_and_run_waits(
    http: httpx.AsyncClient,
) -> None:
    arguments, asked = await waiting(http, "mrtr-forged")
    state = asked["requestState"]
    body, mac = state.split(".")
    flipped = ("A" if mac[0] != "A" else "B") + mac[1:]
    other_call = {**arguments, "plan": delete("Other")}
    tries = [
        await post(http, "tools/call", retry(arguments, f"{body}.{flipped}")),  # altered
        await post(http, "tools/call", retry(arguments, "x.y")),  # forged
        await post(http, "tools/call", retry(arguments, state + "==")),  # respelled
        await post(http, "tools/call", retry(arguments, "." * 5000)),  # oversized
        await post(http, "tools/call", retry(other_call, state)),  # replayed onto another call
        await post(http, "tools/call", retry(arguments, state), who=BEN),  # another user's
    ]
    for refused in tries:
        assert refused.status_code == 400, refused.text
        error = refused.json()["error"]
        assert error["code"] == -32602
        assert "not valid for you" in error["message"] and "still waits" in error["message"]
    not_text = await post(http, "tools/call", retry(arguments, {"not": "a string"}))
    assert not_text.status_code == 400 and "requestState" in not_text.json()["error"]["message"]
    no_answer = await post(http, "tools/call", {**retry(arguments, state), "inputResponses": {}})
    assert no_answer.status_code == 400
    assert "inputResponses.approval" in no_answer.json()["error"]["message"]
    assert await status(http, asked["_meta"]["blendmesh/run_id"]) == "awaiting_confirmation"


async def test_client_without_forms_is_told_the_cli_command(http: httpx.AsyncClient) -> None:
    made = result(await call(http, "run", {"scene_id": "mrtr-cli", "plan": create("Box")}))
    assert not made.get("isError"), made
    answer = result(await call(http, "run", {"scene_id": "mrtr-cli", "plan": delete("Box")}))
    assert answer["resultType"] == "complete"
    approval = answer["structuredContent"]["approval"]
    assert approval["approve_command"].startswith("blendmesh approve")


async def test_malformed_requests_get_the_revisions_errors(http: httpx.AsyncClient) -> None:
    mismatch = await post(http, "tools/list", {}, version="2099-01-01")
    unknown = await post(http, "ping", {})
    no_token = await http.post(
        "/mcp", json={"jsonrpc": "2.0", "id": 1}, headers={"MCP-Protocol-Version": VERSION}
    )
    garbage = await http.post(
        "/mcp", content=b"{not json", headers={**ANA, "MCP-Protocol-Version": VERSION}
    )
    bad_args = await call(http, "run", {"scene_id": "x", "nope": 1})
    assert mismatch.status_code == 400  # the header is not the version its body names
    assert mismatch.json()["error"]["code"] == -32020
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == -32601
    assert no_token.status_code == 401
    assert garbage.status_code == 400 and garbage.json()["error"]["code"] == -32700
    checked = result(bad_args)
    assert checked["isError"] is True
    assert "unknown argument" in checked["structuredContent"]["error"]["message"]


async def sdk2_client(gateway: str, token: str, scene: str, answer: str) -> dict[str, Any]:
    """What the official Python SDK 2.x client saw, driving ``/mcp`` as a host would."""
    if not HAS_MCP2:
        pytest.skip(
            f"no Python with the mcp 2.x SDK at {MCP2_PYTHON} (.ci/run makes .venv-mcp2; "
            "BLENDMESH_MCP2_PYTHON names another)"
        )
    script = ROOT / "tests" / "support" / "mcp2_client.py"
    process = await asyncio.create_subprocess_exec(
        str(MCP2_PYTHON), str(script), f"{gateway}/mcp", token, scene, answer,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 300)
    assert process.returncode == 0, err.decode()[-3000:]
    seen: dict[str, Any] = json.loads(out)
    return seen


async def test_official_sdk2_client_approves_through_mrtr(gateway: str) -> None:
    seen = await sdk2_client(gateway, "tok-ana", "sdk2-ok", "accept")
    assert seen["protocol_version"] == VERSION  # it probed server/discover and stayed modern
    assert "run" in seen["tools"] and seen["made"] == "completed"
    [question] = seen["asked"]  # the SDK answered the InputRequiredResult's form itself
    assert "object.delete" in question
    assert seen["deleted"]["status"] == "completed"
    assert seen["deleted"]["receipts"][0]["tool_name"] == "object.delete"


async def test_official_sdk2_client_declining_rejects_the_run(gateway: str) -> None:
    seen = await sdk2_client(gateway, "tok-ben", "sdk2-no", "decline")
    assert len(seen["asked"]) == 1
    assert seen["deleted"]["failure"]["error_code"] == "APPROVAL_REJECTED"


TASKS: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


async def task_call(
    http: httpx.AsyncClient, method: str, task_id: str, who: dict[str, str] = ANA, **params: Any
) -> httpx.Response:
    return await post(http, method, {"taskId": task_id, **params}, who=who, capabilities=TASKS)


async def task_until(
    http: httpx.AsyncClient, task_id: str, statuses: set[str], who: dict[str, str] = ANA
) -> dict[str, Any]:
    """``tasks/get`` as a client polls it, until the task is in one of ``statuses``."""
    for _ in range(600):
        response = await task_call(http, "tasks/get", task_id, who)
        assert response.status_code == 200, response.text
        task: dict[str, Any] = response.json()["result"]
        assert task["resultType"] == "complete" and task["taskId"] == task_id
        if task["status"] in statuses:
            return task
        await asyncio.sleep(task["pollIntervalMs"] / 1000)
    raise AssertionError(f"task {task_id} never reached {statuses}")


async def waiting_task(http: httpx.AsyncClient, scene: str) -> dict[str, Any]:
    """A run as a task, on ``scene`` with a Box in it, that waits to delete the Box."""
    made = result(await call(http, "run", {"scene_id": scene, "plan": create("Box")}))
    assert not made.get("isError"), made
    arguments = {"scene_id": scene, "plan": delete("Box")}
    started = (await call(http, "run", arguments, capabilities=TASKS)).json()["result"]
    assert started["resultType"] == "task" and started["status"] == "working", started
    return await task_until(http, started["taskId"], {"input_required"})


async def test_run_as_task_is_followed_to_its_result(http: httpx.AsyncClient) -> None:
    found = result(await post(http, "server/discover", {}), "server/discover")
    assert "io.modelcontextprotocol/tasks" in found["capabilities"]["extensions"]
    arguments = {"scene_id": "task-ok", "plan": create("Box")}
    started = (await call(http, "run", arguments, capabilities=TASKS)).json()["result"]
    assert started["resultType"] == "task" and started["ttlMs"] is None
    done = await task_until(http, started["taskId"], {"completed", "failed", "cancelled"})
    assert done["status"] == "completed"
    wire.validate_server_result("tools/call", VERSION, done["result"])
    assert done["result"]["structuredContent"]["status"] == "completed"
    assert done["result"]["structuredContent"]["run_id"] == started["taskId"]


async def test_task_waiting_on_a_person_is_approved_by_tasks_update(
    http: httpx.AsyncClient,
) -> None:
    asking = await waiting_task(http, "task-approve")
    [(key, form)] = asking["inputRequests"].items()
    assert form["method"] == "elicitation/create" and "object.delete" in form["params"]["message"]
    unknown_key = await task_call(
        http, "tasks/update", asking["taskId"], inputResponses={"nope": {"action": "accept"}}
    )
    assert unknown_key.status_code == 200  # ignored, as the extension says
    still = await task_until(http, asking["taskId"], {"input_required", "working"})
    assert still["status"] == "input_required"
    answer = {key: {"action": "accept", "content": {"approve": True}}}
    acked = await task_call(http, "tasks/update", asking["taskId"], inputResponses=answer)
    assert acked.status_code == 200 and acked.json()["result"]["resultType"] == "complete"
    done = await task_until(http, asking["taskId"], {"completed", "failed", "cancelled"})
    assert done["status"] == "completed"
    assert done["result"]["structuredContent"]["status"] == "completed"


async def test_task_cancelled_while_it_waits_ends_cancelled_by_its_user(
    http: httpx.AsyncClient,
) -> None:
    asking = await waiting_task(http, "task-cancel")
    acked = await task_call(http, "tasks/cancel", asking["taskId"])
    assert acked.status_code == 200, acked.text
    ended = await task_until(http, asking["taskId"], {"completed", "failed", "cancelled"})
    assert ended["status"] == "cancelled"
    assert ended["statusMessage"].startswith("ana cancelled the run"), ended  # who, in the log
    status = result(await call(http, "run_status", {"run_id": asking["taskId"]}))
    assert status["structuredContent"]["failure"]["error_code"] == "RUN_CANCELLED"
    again = await task_call(http, "tasks/cancel", asking["taskId"])  # over: acknowledged
    assert again.status_code == 200


async def test_another_users_task_answers_as_an_unknown_one(http: httpx.AsyncClient) -> None:
    asking = await waiting_task(http, "task-theirs")
    key = next(iter(asking["inputRequests"]))
    answer = {key: {"action": "accept"}}
    tries = [
        await task_call(http, "tasks/get", asking["taskId"], BEN),
        await task_call(http, "tasks/update", asking["taskId"], BEN, inputResponses=answer),
        await task_call(http, "tasks/cancel", asking["taskId"], BEN),
    ]
    unknown = await task_call(http, "tasks/get", "run-nobody-has-this")
    bad_id = await task_call(http, "tasks/get", "../*")
    for refused in [*tries, unknown, bad_id]:
        assert refused.status_code == 400, refused.text
        assert refused.json()["error"]["code"] == -32602
        assert "no task" in refused.json()["error"]["message"]
    assert tries[0].json()["error"]["message"].replace(asking["taskId"], "X") == unknown.json()[
        "error"
    ]["message"].replace("run-nobody-has-this", "X")
    still = await task_until(http, asking["taskId"], {"input_required", "working"})
    assert still["status"] == "input_required"  # nothing of Ben's reached the run


async def test_tasks_methods_need_the_extension_and_well_formed_params(
    http: httpx.AsyncClient,
) -> None:
    undeclared = await post(http, "tasks/get", {"taskId": "run-x"})
    no_id = await post(http, "tasks/get", {}, capabilities=TASKS)
    no_answers = await post(http, "tasks/update", {"taskId": "run-x"}, capabilities=TASKS)
    assert undeclared.status_code == 400
    assert undeclared.json()["error"]["code"] == -32021
    assert "io.modelcontextprotocol/tasks" in undeclared.json()["error"]["message"]
    assert no_id.status_code == 400 and "taskId" in no_id.json()["error"]["message"]
    assert no_answers.status_code == 400
    assert "inputResponses" in no_answers.json()["error"]["message"]
    asking = await waiting_task(http, "task-malformed")
    key = next(iter(asking["inputRequests"]))
    malformed = await task_call(
        http, "tasks/update", asking["taskId"], inputResponses={key: {"action": "always"}}
    )
    assert malformed.status_code == 400 and "action" in malformed.json()["error"]["message"]


async def test_headers_that_contradict_the_body_are_refused(http: httpx.AsyncClient) -> None:
    other_method = await post(http, "tools/list", {}, headers={"Mcp-Method": "prompts/list"})
    other_name = await call(http, "runs", {}, headers={"Mcp-Name": "run"})
    encoded = base64.b64encode(b"runs").decode()
    as_base64 = await call(http, "runs", {}, headers={"Mcp-Name": f"=?base64?{encoded}?="})
    no_meta = await post(http, "tools/list", {}, body_meta={})
    unknown_version = await post(
        http,
        "server/discover",
        {},
        version="v999",
        body_meta={**meta(), "io.modelcontextprotocol/protocolVersion": "v999"},
    )
    no_method = await http.post(
        "/mcp",
        json={"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": meta()}},
        headers={**ANA, "MCP-Protocol-Version": VERSION},
    )
    for refused in (other_method, other_name, no_method):
        assert refused.status_code == 400, refused.text
        assert refused.json()["error"]["code"] == -32020
    assert result(as_base64)["structuredContent"]["runs"] is not None
    assert no_meta.status_code == 400 and no_meta.json()["error"]["code"] == -32602
    assert unknown_version.status_code == 400
    error = unknown_version.json()["error"]
    assert error["code"] == -32022 and error["data"] == {
        "supported": [VERSION],
        "requested": "v999",
    }
    assert unknown_version.json()["id"] is not None  # every error names its request


async def test_import_asset_as_task_is_followed_to_its_result(http: httpx.AsyncClient) -> None:
    data = base64.b64encode(glb()).decode()
    arguments = {
        "scene_id": "task-import",
        "filename": "tri.glb",
        "data": data,
        "collection": "Props",
    }
    started = (await call(http, "import_asset", arguments, capabilities=TASKS)).json()["result"]
    assert started["resultType"] == "task", started
    done = await task_until(http, started["taskId"], {"completed", "failed", "cancelled"})
    assert done["status"] == "completed"
    assert done["result"]["structuredContent"]["status"] == "completed", done["result"]
    refused = await call(http, "import_asset", {**arguments, "data": "%%"}, capabilities=TASKS)
    answer = result(refused)  # bad input is the call's own answer, no task made
    assert answer["isError"] is True and "base64" in answer["structuredContent"]["error"]["message"]


async def test_a_body_over_the_limit_is_refused_before_it_is_read(
    http: httpx.AsyncClient,
) -> None:
    huge = "x" * (2 * 1024 * 1024)
    refused = await call(http, "run", {"scene_id": "big", "request": huge})
    assert refused.status_code == 413
    assert "BLENDMESH_MAX_BODY_BYTES" in refused.text


async def approve_in_console(http: httpx.AsyncClient, run_id: str, decision: str) -> None:
    """The person answers on the console's page: its API, with their own token."""
    pending = (await http.get("/api/agent/approvals/pending", headers=ANA)).json()["approvals"]
    [asked] = [a for a in pending if a["runId"] == run_id]
    keys = ("approvalId", "requestHash", "codeSha256")
    body = {"decision": decision, **{k: asked[k] for k in keys}}
    answered = await http.post("/api/agent/approvals/resolve", json=body, headers=ANA)
    assert answered.status_code == 200, answered.text


async def test_url_only_client_is_sent_to_the_console_and_follows_its_answer(
    http: httpx.AsyncClient, gateway: str
) -> None:
    made = result(await call(http, "run", {"scene_id": "mrtr-url", "plan": create("Box")}))
    assert not made.get("isError"), made
    arguments = {"scene_id": "mrtr-url", "plan": delete("Box")}
    urls = {"elicitation": {"url": {}}}
    asked = result(await call(http, "run", arguments, capabilities=urls))
    assert asked["resultType"] == "input_required", asked
    page = asked["inputRequests"]["approval"]["params"]
    run_id = asked["_meta"]["blendmesh/run_id"]
    assert page["mode"] == "url" and page["url"] == f"{gateway}/?run={run_id}"
    await approve_in_console(http, run_id, "approve_once")
    done_there = retry(arguments, asked["requestState"])  # accept: "I answered on the page"
    done = result(await post(http, "tools/call", done_there, capabilities=urls))
    assert done["resultType"] == "complete", done
    assert done["structuredContent"]["status"] == "completed", done
    assert done["structuredContent"]["receipts"][0]["tool_name"] == "object.delete"


async def test_url_only_client_declining_the_page_rejects_the_run(http: httpx.AsyncClient) -> None:
    made = result(await call(http, "run", {"scene_id": "mrtr-url-no", "plan": create("Box")}))
    assert not made.get("isError"), made
    arguments = {"scene_id": "mrtr-url-no", "plan": delete("Box")}
    urls = {"elicitation": {"url": {}}}
    asked = result(await call(http, "run", arguments, capabilities=urls))
    declined = retry(arguments, asked["requestState"], "decline")
    answer = result(await post(http, "tools/call", declined, capabilities=urls))
    assert answer["structuredContent"]["failure"]["error_code"] == "APPROVAL_REJECTED"


async def test_reads_as_tasks_answer_what_their_calls_would(http: httpx.AsyncClient) -> None:
    made = result(await call(http, "run", {"scene_id": "task-reads", "plan": create("Box")}))
    assert not made.get("isError"), made
    looks = {
        "inspect_object": {"scene_id": "task-reads", "name": "Box"},
        "render_view": {"scene_id": "task-reads", "width": 64, "height": 64},
    }
    done = {}
    for name, arguments in looks.items():
        started = (await call(http, name, arguments, capabilities=TASKS)).json()["result"]
        assert started["resultType"] == "task", started
        done[name] = await task_until(http, started["taskId"], {"completed", "failed"})
    inspected = done["inspect_object"]["result"]
    assert inspected["structuredContent"]["name"] == "Box", inspected
    viewed = done["render_view"]["result"]
    assert [c["type"] for c in viewed["content"]] == ["text", "image"], viewed
    someone_elses = await call(
        http, "render_view", looks["render_view"], who=BEN, capabilities=TASKS
    )
    refused = result(someone_elses)  # another user's scene: no task, an unknown scene
    assert (
        refused["isError"] is True and refused["structuredContent"]["error"]["type"] == "NotFound"
    )


async def test_traceparent_in_meta_continues_the_callers_trace(http: httpx.AsyncClient) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.configure_tracing(Settings(home=Path("unused")), provider=provider)
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    try:
        traced = {**meta(), "traceparent": f"00-{trace_id}-00f067aa0ba902b7-01"}
        arguments = {"scene_id": "traced", "plan": create("Box")}
        answer = await post(
            http, "tools/call", {"name": "run", "arguments": arguments}, body_meta=traced
        )
        bogus = {**meta(), "traceparent": "not-a-traceparent" * 100}
        still = await post(http, "tools/list", {}, body_meta=bogus)
        runs = [s for s in exporter.get_finished_spans() if s.name == "blendmesh run"]
    finally:
        tracing.shutdown_tracing()
        provider.shutdown()
    assert result(answer)["structuredContent"]["status"] == "completed"
    assert [format(s.context.trace_id, "032x") for s in runs] == [trace_id]
    assert result(still, "tools/list")["tools"]  # a malformed one continues nothing, harms nothing


async def test_a_request_whose_client_hangs_up_stops_being_answered(
    http: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="blendmesh.gateway")
    made = result(await call(http, "run", {"scene_id": "hang-up", "plan": create("Box")}))
    assert not made.get("isError"), made
    arguments = {"scene_id": "hang-up", "plan": delete("Box")}
    urls = {"elicitation": {"url": {}}}
    asked = result(await call(http, "run", arguments, capabilities=urls))
    # "Done on the page" while the approval still waits: the server would wait for it.
    body = {**retry(arguments, asked["requestState"]), "_meta": meta(urls)}
    sent = {**ANA, "MCP-Protocol-Version": VERSION, "Mcp-Method": "tools/call", "Mcp-Name": "run"}
    payload = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": body}
    with pytest.raises(httpx.ReadTimeout):
        await http.post("/mcp", json=payload, headers=sent, timeout=httpx.Timeout(5, read=0.5))
    said = "ended unanswered: its client hung up"
    for _ in range(40):  # well within the 10 s the server would have waited
        if any(said in r.getMessage() for r in caplog.records):
            break
        await asyncio.sleep(0.1)
    assert any(said in r.getMessage() for r in caplog.records)
    assert await status(http, asked["_meta"]["blendmesh/run_id"]) == "awaiting_confirmation"


async def test_2026_takes_posts_only(http: httpx.AsyncClient) -> None:
    for method in ("GET", "DELETE"):
        answer = await http.request(
            method, "/mcp", headers={**ANA, "MCP-Protocol-Version": VERSION}
        )
        assert answer.status_code == 405, answer.text
        assert "one JSON-RPC request per POST" in answer.text
