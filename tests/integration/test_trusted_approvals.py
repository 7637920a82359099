"""Approving trusted Python at every door, on a real log: the HTTP gateway, the client the
CLI and the gateway share, the ``blendmesh approve`` command and the MCP door.

No planner or policy runs here: the runs are asked for as a client asks, and their
approvals published as the policy publishes them (until the bridge has a python.trusted
tool, no plan can reach one). What each door publishes is then read back from the log.
"""

from __future__ import annotations

import asyncio
import subprocess
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from contracts.python_steps import code_sha256
from services.doors.cli.mesh import Mesh
from services.doors.core.client import ClientError, CodeNotQuoted, MeshClient
from services.doors.gateway.app import create_app
from services.doors.gateway.auth import Tokens
from services.doors.mcp.approval import _decide
from services.doors.mcp.door import Door
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.meshes import BLENDMESH, command_env
from tests.support.trusted_runs import CODE, audit_mesh_fixtures, resolutions, waiting_run

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

ANA = {"Authorization": "Bearer tok-ana"}
DIGEST = code_sha256(CODE)
SNEAKY = "x = 1\n# \u202e hidden"


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    # No picture is looked at here: a Blender rendering every commit would only compete
    # with the runs for the CPU, and a stop would wait for its last render.
    return Settings(
        home=tmp_path_factory.mktemp("home"), prefix="bmtrust", user="ana", previews=False
    )


mesh, policy_bus = audit_mesh_fixtures()


def api(mesh: tuple[Mesh, Bus], run_timeout: float = 120) -> httpx.AsyncClient:
    app = create_app(mesh[0].settings, mesh[1], Tokens({"tok-ana": "ana"}), run_timeout=run_timeout)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gateway")


async def pending_of(client: httpx.AsyncClient, run_id: str) -> dict[str, Any]:
    for _ in range(100):  # the audit views project the run a moment after the log has it
        response = await client.get("/api/agent/approvals/pending", headers=ANA)
        assert response.status_code == 200, response.text
        found = [a for a in response.json()["approvals"] if a["runId"] == run_id]
        if found:
            return found[0]
        await asyncio.sleep(0.05)
    raise AssertionError(f"no pending approval for {run_id}")


# -- HTTP -------------------------------------------------------------------------------


async def test_pending_when_trusted_python_waits_shows_code_and_hash(
    mesh: tuple[Mesh, Bus], policy_bus: Bus
) -> None:
    run_id = await waiting_run(mesh, policy_bus)
    async with api(mesh) as client:
        pending = await pending_of(client, run_id)
    assert pending["codeSha256"] == [DIGEST]
    trusted = pending["operations"][1]
    assert trusted["tool"] == "python.trusted"
    assert trusted["args"]["code"] == CODE and trusted["args"]["code_sha256"] == DIGEST


async def test_resolve_when_code_hash_missing_answers_409_naming_it_and_resolves_nothing(
    mesh: tuple[Mesh, Bus], policy_bus: Bus
) -> None:
    run_id = await waiting_run(mesh, policy_bus)
    async with api(mesh) as client:
        pending = await pending_of(client, run_id)
        body = {
            "approvalId": pending["approvalId"],
            "decision": "approve_once",
            "requestHash": pending["requestHash"],
        }
        bare = await client.post("/api/agent/approvals/resolve", json=body, headers=ANA)
        other = await client.post(
            "/api/agent/approvals/resolve",
            json={**body, "decision": "approve_and_always_allow", "codeSha256": [code_sha256("x")]},
            headers=ANA,
        )
        still = await pending_of(client, run_id)
    for answer in (bare, other):
        assert answer.status_code == 409, answer.text
        error = answer.json()["error"]
        assert error["type"] == "Conflict"
        assert f"missing {DIGEST} (operation op2)" in error["message"]
    assert still["approvalId"] == pending["approvalId"]
    assert await resolutions(mesh, run_id) == []


async def test_resolve_when_code_hash_malformed_answers_422_naming_the_field(
    mesh: tuple[Mesh, Bus], policy_bus: Bus
) -> None:
    run_id = await waiting_run(mesh, policy_bus)
    async with api(mesh) as client:
        pending = await pending_of(client, run_id)
        body = {
            "approvalId": pending["approvalId"],
            "decision": "approve_once",
            "requestHash": pending["requestHash"],
        }
        bad = await client.post(
            "/api/agent/approvals/resolve",
            json={**body, "codeSha256": [DIGEST.upper()]},
            headers=ANA,
        )
        many = await client.post(
            "/api/agent/approvals/resolve", json={**body, "codeSha256": [DIGEST] * 501}, headers=ANA
        )
    assert bad.status_code == 422 and "codeSha256" in bad.json()["error"]["message"]
    assert many.status_code == 422 and "codeSha256" in many.json()["error"]["message"]
    assert await resolutions(mesh, run_id) == []


async def test_resolve_when_hash_quoted_publishes_an_approval_quoting_it(
    mesh: tuple[Mesh, Bus], policy_bus: Bus
) -> None:
    run_id = await waiting_run(mesh, policy_bus)
    async with api(mesh, run_timeout=0.5) as client:
        pending = await pending_of(client, run_id)
        body = {
            "approvalId": pending["approvalId"],
            "decision": "approve_once",
            "requestHash": pending["requestHash"],
            "codeSha256": pending["codeSha256"],
        }
        answer = await client.post("/api/agent/approvals/resolve", json=body, headers=ANA)
    assert answer.status_code == 504  # no policy runs here to answer the approval
    [resolution] = await resolutions(mesh, run_id)
    assert resolution.decision == "approve_once" and resolution.code_sha256 == [DIGEST]
    assert resolution.resolved_by == "ana"


async def test_resolve_when_decision_is_the_spec_alias_publishes_always_allow(
    mesh: tuple[Mesh, Bus], policy_bus: Bus
) -> None:
    """002 §7's ``approve_and_always_allow_recipient`` is blendmesh's always-allow, not a 422."""
    run_id = await waiting_run(mesh, policy_bus)
    async with api(mesh, run_timeout=0.5) as client:
        pending = await pending_of(client, run_id)
        body = {
            "approvalId": pending["approvalId"],
            "decision": "approve_and_always_allow_recipient",
            "requestHash": pending["requestHash"],
            "codeSha256": pending["codeSha256"],
        }
        answer = await client.post("/api/agent/approvals/resolve", json=body, headers=ANA)
        unknown = await client.post(
            "/api/agent/approvals/resolve",
            json={**body, "decision": "approve_forever"},
            headers=ANA,
        )
    assert answer.status_code == 504  # no policy runs here to answer the approval
    assert unknown.status_code == 422 and "decision" in unknown.json()["error"]["message"]
    [resolution] = await resolutions(mesh, run_id)
    assert resolution.decision == "approve_and_always_allow"


# -- the client the CLI and the gateway share -------------------------------------------


async def test_client_resolve_when_approving_without_hash_refuses_and_publishes_nothing(
    mesh: tuple[Mesh, Bus], policy_bus: Bus
) -> None:
    run_id = await waiting_run(mesh, policy_bus)
    client = MeshClient(mesh[1])
    with pytest.raises(CodeNotQuoted, match=f"missing {DIGEST} \\(operation op2\\)"):
        await client.resolve(run_id, "approve_once", "ana")
    with pytest.raises(ClientError, match="is not 'sha256:' and 64 lowercase hex digits"):
        await client.resolve(run_id, "approve_once", "ana", code_sha256=["sha256:zz"])
    with pytest.raises(ClientError, match="at most 500 code hashes"):
        hashes = [code_sha256(str(i)) for i in range(501)]
        await client.resolve(run_id, "approve_once", "ana", code_sha256=hashes)
    assert await resolutions(mesh, run_id) == []


async def test_client_resolve_when_rejecting_needs_no_hash_and_quotes_none(
    mesh: tuple[Mesh, Bus], policy_bus: Bus
) -> None:
    run_id = await waiting_run(mesh, policy_bus)
    with pytest.raises(ClientError, match="no result within"):
        await MeshClient(mesh[1]).resolve(run_id, "reject", "ana", timeout=0.3)
    [resolution] = await resolutions(mesh, run_id)
    assert resolution.decision == "reject" and resolution.code_sha256 == []


# -- blendmesh approve ------------------------------------------------------------------


def blendmesh(mesh: tuple[Mesh, Bus], *args: str) -> subprocess.CompletedProcess[str]:
    settings = mesh[0].settings
    env = {
        "NATS_URL": mesh[0].url,
        "BLENDMESH_NATS_CREDENTIALS": str(settings.credentials_path),
        "BLENDMESH_PREFIX": settings.prefix,
        "BLENDMESH_USER": "ana",
    }
    return subprocess.run(
        [BLENDMESH, "--home", str(settings.home / "cli"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=command_env(env),
        stdin=subprocess.DEVNULL,
    )


async def test_cli_approve_when_hash_not_quoted_shows_the_code_and_exits_2(
    mesh: tuple[Mesh, Bus], policy_bus: Bus
) -> None:
    run_id = await waiting_run(mesh, policy_bus, SNEAKY)
    digest = code_sha256(SNEAKY)
    proc = await asyncio.to_thread(blendmesh, mesh, "approve", run_id)
    assert proc.returncode == 2, proc.stderr
    assert f"missing {digest} (operation op2)" in proc.stderr
    assert f"trusted Python, {digest}:" in proc.stderr
    assert "2 | # \\u202e hidden" in proc.stderr
    assert f"approve: blendmesh approve {run_id} --code-sha256 {digest}" in proc.stderr
    assert await resolutions(mesh, run_id) == []


async def test_cli_approve_when_hash_quoted_publishes_an_approval_quoting_it(
    mesh: tuple[Mesh, Bus], policy_bus: Bus
) -> None:
    run_id = await waiting_run(mesh, policy_bus)
    proc = await asyncio.to_thread(
        blendmesh, mesh, "approve", run_id, "--code-sha256", DIGEST, "--timeout", "0.5"
    )
    assert proc.returncode == 4 and "no result within 0.5 s" in proc.stderr  # no policy here
    [resolution] = await resolutions(mesh, run_id)
    assert resolution.code_sha256 == [DIGEST] and resolution.resolved_by == "ana"


# -- MCP --------------------------------------------------------------------------------


@dataclass
class Answer:
    action: str
    content: dict[str, Any] | None = None


class Host:
    """The person behind an MCP host: records each question and accepts it."""

    def __init__(self) -> None:
        self.questions: list[str] = []

    async def elicit_form(self, message: str, schema: Any, related_request_id: Any) -> Answer:
        self.questions.append(message)
        return Answer("accept", {"approve": True})


@dataclass
class Ctx:
    session: Host
    request_id: str = "call-1"


async def test_mcp_when_person_accepts_quotes_the_hash_of_the_code_shown(
    mesh: tuple[Mesh, Bus], policy_bus: Bus
) -> None:
    run_id = await waiting_run(mesh, policy_bus)
    client = MeshClient(mesh[1])
    door = Door(mesh[0].settings, mesh[1], client, run_timeout=0.3)
    waiting = await client.result(run_id)
    assert waiting is not None
    host = Host()
    with pytest.raises(ClientError, match="no result within"):  # no policy answers here
        await _decide(door, "ana", Ctx(host), waiting, None, None, "form")  # type: ignore[arg-type]
    [question] = host.questions
    assert f"trusted Python, {DIGEST}:" in question and "1 | import bpy" in question
    [resolution] = await resolutions(mesh, run_id)
    assert resolution.decision == "approve_once" and resolution.code_sha256 == [DIGEST]
