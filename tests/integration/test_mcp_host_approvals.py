"""An approval reaches its person however the MCP host can show one, through ``/mcp`` on
a real mesh and real Blender: an MCP Apps host gets the approval card, whose sealed
approval answers it once (a forged, altered or another user's seal is refused); a host
that only opens URLs is sent to the console's page and the run follows the person's
answer there; a host that can do neither is told the CLI command."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import mcp.types as types
import pytest
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.context import RequestContext

from services.doors.mcp.cards import CARD_URI, SEAL_KEY
from services.runtime.service.settings import Settings
from tests.support.checked_session import APPS, URL_ONLY, HostSession
from tests.support.gateways import gateway_fixture
from tests.support.mcp_plans import error_type, op, plan, structured
from tests.support.meshes import mesh_fixture

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

TOKENS = {"tok-ana": "ana", "tok-ben": "ben"}
ANA, BEN = ({"Authorization": f"Bearer {t}"} for t in TOKENS)


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    home = tmp_path_factory.mktemp("home")
    return Settings(home=home, prefix="bmhosts", user="local", previews=False)


mesh = mesh_fixture(client="test-mcp-hosts")


gateway = gateway_fixture(TOKENS)


@asynccontextmanager
async def host(
    url: str, headers: dict[str, str], capabilities: types.ClientCapabilities, **callbacks: Any
) -> AsyncIterator[HostSession]:
    async with (
        httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30, read=300)) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write, _),
        HostSession(read, write, capabilities=capabilities, **callbacks) as session,
    ):
        await session.initialize()
        yield session


async def waiting_delete(session: HostSession, scene: str) -> types.CallToolResult:
    """``scene`` with a Box in it, and a run that waits for a person to delete it."""
    made = await session.call_tool(
        "run",
        {
            "scene_id": scene,
            "plan": plan(op("op1", "object.create", {"primitive": "cube", "name": "Box"})),
        },
    )
    assert not made.isError, made.content
    doomed = plan(op("op1", "object.delete", {"name": "Box"}, "destructive"))
    return await session.call_tool("run", {"scene_id": scene, "plan": doomed})


async def test_apps_host_when_run_waits_gets_the_card_and_approves_it_once(gateway: str) -> None:
    async with host(gateway, ANA, APPS) as session:
        listed = {t.name: t for t in (await session.list_tools()).tools}
        card = await session.read_resource(CARD_URI)  # type: ignore[arg-type]
        waiting = await waiting_delete(session, "card-ok")
        seal = (waiting.meta or {}).get(SEAL_KEY)
        approved = await session.call_tool(
            "answer_approval", {"approval": seal, "decision": "approve"}
        )
        again = await session.call_tool(
            "answer_approval", {"approval": seal, "decision": "approve"}
        )
    assert listed["run"].meta == {"ui": {"resourceUri": CARD_URI}}
    assert listed["answer_approval"].meta["ui"]["visibility"] == ["app"]  # type: ignore[index]
    [page] = card.contents
    assert page.mimeType == "text/html;profile=mcp-app" and "answer_approval" in page.text  # type: ignore[union-attr]
    assert structured(waiting)["status"] == "awaiting_confirmation"
    assert isinstance(seal, str) and seal
    # The seal is the card's: the model reads the content and the structure, not _meta.
    seen = json.dumps([c.model_dump() for c in waiting.content]) + json.dumps(structured(waiting))
    assert seal not in seen and "card shown with this result" in seen
    assert structured(approved)["status"] == "completed", approved.content
    assert error_type(again) == "Conflict"
    assert "no longer waits on this approval" in structured(again)["error"]["message"]


async def test_apps_host_when_card_rejects_fails_the_run_as_rejected(gateway: str) -> None:
    async with host(gateway, ANA, APPS) as session:
        waiting = await waiting_delete(session, "card-no")
        seal = (waiting.meta or {})[SEAL_KEY]
        rejected = await session.call_tool(
            "answer_approval", {"approval": seal, "decision": "reject"}
        )
    assert structured(rejected)["failure"]["error_code"] == "APPROVAL_REJECTED"


async def test_seal_when_forged_altered_or_another_users_is_refused(gateway: str) -> None:
    async with host(gateway, ANA, APPS) as session:
        waiting = await waiting_delete(session, "card-forged")
        seal = (waiting.meta or {})[SEAL_KEY]
        body, mac = seal.split(".")
        flipped = ("A" if mac[0] != "A" else "B") + mac[1:]
        tries = [f"{body}.{flipped}", "x.y", "not-a-seal", "." * 4000, seal + "=="]
        refused = [
            await session.call_tool("answer_approval", {"approval": t, "decision": "approve"})
            for t in tries
        ]
        odd = await session.call_tool("answer_approval", {"approval": seal, "decision": "always"})
    async with host(gateway, BEN, APPS) as bens:
        stolen = await bens.call_tool("answer_approval", {"approval": seal, "decision": "approve"})
    for answer in [*refused, stolen]:
        assert error_type(answer) == "ValidationError", answer.content
        assert "not valid for you" in structured(answer)["error"]["message"]
    assert error_type(odd) == "ValidationError"
    async with host(gateway, ANA, APPS) as session:  # nothing of that reached the run
        status = await session.call_tool("run_status", {"run_id": structured(waiting)["run_id"]})
    assert structured(status)["status"] == "awaiting_confirmation"


async def test_url_host_when_run_waits_follows_the_persons_answer_in_the_console(
    gateway: str,
) -> None:
    opened: list[types.ElicitRequestURLParams] = []
    completed: list[str] = []

    async def approve_in_console(run_id: str) -> None:
        async with httpx.AsyncClient(base_url=gateway, headers=ANA, timeout=120) as http:
            pending = (await http.get("/api/agent/approvals/pending")).json()["approvals"]
            [asked] = [a for a in pending if a["runId"] == run_id]
            keys = ("approvalId", "requestHash", "codeSha256")
            body = {"decision": "approve_once", **{k: asked[k] for k in keys}}
            assert (await http.post("/api/agent/approvals/resolve", json=body)).status_code == 200

    async def elicit(_ctx: RequestContext[Any, Any], params: Any) -> types.ElicitResult:
        opened.append(params)
        run_id = params.url.rsplit("=", 1)[1]
        asyncio.get_running_loop().create_task(approve_in_console(run_id))  # the person, later
        return types.ElicitResult(action="accept")

    async def on_message(message: Any) -> None:
        root = getattr(message, "root", None)
        if isinstance(root, types.ElicitCompleteNotification):
            completed.append(root.params.elicitationId)

    async with host(
        gateway, ANA, URL_ONLY, elicitation_callback=elicit, message_handler=on_message
    ) as session:
        answer = await waiting_delete(session, "by-url")
        await asyncio.sleep(0.2)  # the completion notice follows the answer's way
    [asked] = opened
    run_id = structured(answer)["run_id"]
    assert asked.mode == "url" and asked.url == f"{gateway}/?run={run_id}"
    assert structured(answer)["status"] == "completed", answer.content
    assert completed == [asked.elicitationId]


async def test_url_host_when_person_will_not_open_it_rejects_the_run(gateway: str) -> None:
    async def decline(_ctx: RequestContext[Any, Any], _params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    async with host(gateway, ANA, URL_ONLY, elicitation_callback=decline) as session:
        answer = await waiting_delete(session, "by-url-no")
    assert structured(answer)["failure"]["error_code"] == "APPROVAL_REJECTED"


async def test_host_that_cannot_ask_is_told_the_cli_command(gateway: str) -> None:
    async with host(gateway, ANA, types.ClientCapabilities()) as session:
        listed = {t.name for t in (await session.list_tools()).tools}
        answer = await waiting_delete(session, "by-cli")
    assert ("answer_approval" not in listed and answer.meta is None) or SEAL_KEY not in (
        answer.meta or {}
    )
    assert structured(answer)["status"] == "awaiting_confirmation"
    assert structured(answer)["approval"]["approve_command"].startswith("blendmesh approve")


FORMS = types.ClientCapabilities(
    elicitation=types.ElicitationCapability(form=types.FormElicitationCapability())
)


@pytest.mark.parametrize("capabilities", [FORMS, URL_ONLY], ids=["form", "url"])
async def test_host_whose_run_is_cancelled_while_it_asks_answers_the_cancelled_run(
    gateway: str, capabilities: types.ClientCapabilities
) -> None:
    # The person stops the run elsewhere while the host's question is open, then
    # dismisses the question: the call answers the run as it ended, not a timeout.
    cancelled: list[types.CallToolResult] = []

    async def cancel_then_decline(_ctx: RequestContext[Any, Any], params: Any) -> Any:
        asked = re.search(r"approve run (\S+):", params.message)
        assert asked is not None, params.message
        run_id = asked.group(1)
        async with host(gateway, ANA, types.ClientCapabilities()) as other:
            cancelled.append(await other.call_tool("cancel_run", {"run_id": run_id}))
        return types.ElicitResult(action="decline")

    scene = f"cancel-asked-{'url' if capabilities is URL_ONLY else 'form'}"
    async with host(
        gateway, ANA, capabilities, elicitation_callback=cancel_then_decline
    ) as session:
        answer = await waiting_delete(session, scene)
    [stopped] = cancelled
    assert structured(stopped)["failure"]["error_code"] == "RUN_CANCELLED", stopped.content
    assert structured(answer)["run_id"] == structured(stopped)["run_id"]
    assert structured(answer)["status"] == "failed", answer.content
    assert structured(answer)["failure"]["error_code"] == "RUN_CANCELLED", answer.content
