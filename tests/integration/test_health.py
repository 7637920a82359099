"""Health on a full mesh (real nats-server, real bpy): every service answers the NATS
services API as ``blendmesh-<role>``, ``blendmesh status`` says the mesh is ready, and
the gateway's ``/healthz`` and ``/readyz`` answer 200 without a token."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator

import httpx
import pytest
import pytest_asyncio

from contracts.health import RUN_NEEDS, MeshStatus
from services.doors.cli import main as cli
from services.doors.cli.mesh import Mesh
from services.doors.core.client import MeshClient
from services.doors.core.requests import build_request
from services.doors.gateway.app import GatewayServer, create_app
from services.doors.gateway.auth import Tokens
from services.doors.gateway.health import ReadinessProbe
from services.runtime.nats import access
from services.runtime.service import health
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.meshes import mesh_fixture, role_bus

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

PREFIX = "bmhealth"
SCENE = "healthscene"
# The services run on this test's event loop: on a busy machine an answer can take longer
# than a status's default wait, and these tests count the answers.
WAIT = 2.0
WAITING = ("--wait", str(WAIT))


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    # No picture is looked at here: a Blender rendering every commit would only compete
    # with the runs for the CPU, and a stop would wait for its last render.
    return Settings(home=tmp_path_factory.mktemp("home"), prefix=PREFIX, user="ana", previews=False)


mesh = mesh_fixture()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def ran(mesh: tuple[Mesh, Bus]) -> MeshStatus:
    """The snapshot once a run has gone through, so consumers have acknowledged something
    and the executor holds the run's scene."""
    bus = mesh[1]
    request = build_request(user="ana", scene_id=SCENE, prompt="add a cube named Box")
    result = await MeshClient(bus).run(request, timeout=120)
    assert result.status == "completed", result
    for _ in range(50):  # the audit consumer acknowledges its batch just after the run ends
        status = await health.snapshot(bus.nc, bus.js, PREFIX, WAIT)
        audit = next(s for s in status.services if s.role == "audit")
        if audit.instances and audit.instances[0].consumers[0].num_ack_pending == 0:
            return status
        await asyncio.sleep(0.1)
    return status


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def api(mesh: tuple[Mesh, Bus]) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(mesh[0].settings, mesh[1], Tokens({"tok-ana": "ana"}))
    app.state.readiness = ReadinessProbe(mesh[1], wait=WAIT)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
        yield client


async def test_snapshot_when_every_service_runs_is_ready_each_role_with_its_version(
    ran: MeshStatus,
) -> None:
    assert ran.ready and ran.reasons == []
    services = {s.role: s for s in ran.services}
    for role in (*RUN_NEEDS, "door"):
        assert len(services[role].instances) == 1, role
        instance = services[role].instances[0]
        assert instance.healthy and instance.version == health.VERSION, instance
    assert not services["gateway"].instances  # no gateway is served in this module
    assert ran.jetstream.ok
    log = next(s for s in ran.jetstream.streams if s.name == f"{PREFIX.upper()}_EVENTS")
    assert log.replicas == 1 and log.leader and log.messages > 0


async def test_snapshot_when_a_run_went_through_shows_consumers_and_the_executors_blender(
    ran: MeshStatus,
) -> None:
    services = {s.role: s for s in ran.services}
    policy = services["policy"].instances[0]
    assert {c.durable for c in policy.consumers} == {"policy", "policy-expiry"}
    planner = services["planner"].instances[0].consumers
    assert [c.durable for c in planner] == ["planner", "planner-cancels"]
    assert planner[0].ack_floor > 0
    assert planner[0].last_ack is not None and planner[0].num_redelivered == 0
    blender = services["executor"].instances[0].blender
    assert blender is not None and blender.up and blender.version.startswith("5.")
    assert (blender.scene, blender.revision) == (SCENE, 1)


async def test_ping_when_two_instances_share_a_role_collects_each_with_its_own_id(
    mesh: tuple[Mesh, Bus],
) -> None:
    client = mesh[1]
    async with role_bus(mesh[0], access.DOOR) as door:
        second = await health.register(door, access.DOOR)
        try:
            found = await health.ping(client.nc, access.DOOR, wait=WAIT, prefix=PREFIX)
            assert len(found) == 2 and second.id in {p.id for p in found}
            assert {p.name for p in found} == {"blendmesh-door"}
            assert {p.version for p in found} == {health.VERSION}
        finally:
            await second.stop()
    assert len(await health.ping(client.nc, access.DOOR, wait=WAIT, prefix=PREFIX)) == 1


async def test_status_command_when_every_service_runs_exits_0_with_the_snapshot(
    mesh: tuple[Mesh, Bus],
    ran: MeshStatus,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("NATS_URL", raising=False)  # found in the home, as `blendmesh up` left it
    monkeypatch.setenv("BLENDMESH_PREFIX", PREFIX)
    home = str(mesh[0].settings.home)
    code = await asyncio.to_thread(cli.main, ["--home", home, "status", "--json", *WAITING])
    printed = json.loads(capsys.readouterr().out)
    assert code == 0 and printed["ready"] is True and printed["reasons"] == []
    executor = next(s for s in printed["services"] if s["role"] == "executor")
    assert executor["instances"][0]["blender"]["scene"] == SCENE  # the operator sees it
    code = await asyncio.to_thread(cli.main, ["--home", home, "status", *WAITING])
    text = capsys.readouterr().out
    assert code == 0 and text.startswith("mesh: ready\n")
    assert f"holds {SCENE} r1" in text and "guardians" in text


async def test_healthz_and_readyz_when_every_service_runs_answer_200_without_a_token(
    api: httpx.AsyncClient, ran: MeshStatus
) -> None:
    live = await api.get("/healthz")
    assert live.status_code == 200 and live.json() == {
        "live": True,
        "nats": "connected",
        "reason": None,
    }
    ready = await api.get("/readyz")
    assert ready.status_code == 200, ready.text
    body = ready.json()
    assert body["ready"] is True and body["reasons"] == []
    executor = next(s for s in body["services"] if s["role"] == "executor")
    assert executor["instances"][0]["blender"]["up"] is True
    assert SCENE not in ready.text  # which scene it holds is not for anyone who asks
    refused = await api.get("/readyz", params={"verbose": "1"})
    assert refused.status_code == 422 and "verbose" in refused.text


async def test_gateway_when_served_answers_as_itself_and_not_once_stopped(
    mesh: tuple[Mesh, Bus],
) -> None:
    client = mesh[1]
    server = GatewayServer(create_app(mesh[0].settings, client, Tokens({})), port=0)
    await server.start()
    try:
        [found] = await health.ping(client.nc, access.GATEWAY, wait=WAIT, prefix=PREFIX)
        [stats] = await health.stats(client.nc, access.GATEWAY, wait=WAIT, prefix=PREFIX)
        assert stats.id == found.id and stats.data.problems == []
        status = await health.snapshot(client.nc, client.js, PREFIX, WAIT)
        gateway = next(s for s in status.services if s.role == "gateway")
        assert gateway.healthy and [i.id for i in gateway.instances] == [found.id]
    finally:
        await server.stop()
    assert await health.ping(client.nc, access.GATEWAY, prefix=PREFIX) == []


async def test_readyz_when_a_metrics_token_is_set_shows_details_only_with_it(
    mesh: tuple[Mesh, Bus], ran: MeshStatus
) -> None:
    settings = dataclasses.replace(mesh[0].settings, metrics_token="tok-operator")
    app = create_app(settings, mesh[1], Tokens({"tok-ana": "ana"}))
    app.state.readiness = ReadinessProbe(mesh[1], wait=WAIT)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
        anyone = await client.get("/readyz")
        user = await client.get("/readyz", headers={"Authorization": "Bearer tok-ana"})
        operator = await client.get("/readyz", headers={"Authorization": "Bearer tok-operator"})
    for bare in (anyone, user):
        assert bare.status_code == 200
        assert bare.json() == {"ready": True, "reasons": [], "services": None, "jetstream": None}
    detail = operator.json()
    executor = next(s for s in detail["services"] if s["role"] == "executor")
    assert executor["instances"][0]["version"] and detail["jetstream"]["streams"]
