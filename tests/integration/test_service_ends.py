"""A service that cannot start, or whose essential work ends, is reported, never left half
alive: a consumer loop says when it ends by itself, the mesh stops every service when one
cannot start, and a start waits for JetStream only as long as it is told."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from pathlib import Path

import httpx
import pytest
from nats.errors import ConnectionClosedError

from contracts import subjects
from contracts.events import AnyEvent, Event
from services.doors.cli.mesh import Mesh
from services.doors.gateway.app import GatewayServer, ServedGateway, create_app
from services.doors.gateway.auth import Tokens
from services.runtime.nats.bus import JetStreamUnavailable
from services.runtime.service.consumer import ConsumerLoop
from services.runtime.service.consumer_spec import ConsumerSpec, Delivery
from services.runtime.service.host import Bus, ConsumerService, ServiceFailed
from services.runtime.service.settings import Settings
from tests.support.bridges import bridge_pids
from tests.support.clusters import NatsCluster

pytestmark = pytest.mark.integration


async def _nothing(event: AnyEvent, delivery: Delivery) -> Sequence[Event]:
    return []


def _spec(durable: str) -> ConsumerSpec:
    return ConsumerSpec(
        durable=durable, filter_subjects=[subjects.any_run("bmtest", "requested")], handler=_nothing
    )


async def test_consumer_service_when_its_connection_closes_for_good_reports_why(
    nats_url: str,
) -> None:
    bus = await Bus.open(nats_url, "bmtest", "test-ending")
    service = ConsumerService("planner")
    await service.add(bus, _spec("ending"))
    failed = asyncio.ensure_future(service.failed())
    try:
        await asyncio.sleep(0.3)
        assert not failed.done(), "a working loop reported a failure"
        await bus.nc.close()  # never reconnects, unlike a server that restarts
        error = await asyncio.wait_for(failed, 20)
        assert isinstance(error, ConnectionClosedError)
        assert service.loops[0].error is error
    finally:
        failed.cancel()
        await service.stop()


async def test_consumer_loop_when_stopped_never_reports_a_failure(bus: Bus) -> None:
    loop = ConsumerLoop(bus.js, bus.publisher, "bmtest", _spec("stopped"))
    await loop.start()
    failed = asyncio.ensure_future(loop.failed())
    await loop.stop()
    await asyncio.sleep(0.5)
    assert not failed.done() and loop.error is None
    failed.cancel()


async def test_mesh_when_a_service_cannot_start_stops_the_others_and_names_it(
    tmp_path: Path,
) -> None:
    settings = Settings(
        home=tmp_path / "home",
        prefix="bmhalf",
        user="ana",
        policy_dir=tmp_path / "no-policies",
        previews=False,
    )
    mesh = Mesh(settings)
    with pytest.raises(ServiceFailed) as raised:
        await mesh.start()
    assert raised.value.name == "policy"
    assert str(raised.value).startswith(
        f"policy could not start: policy folder {tmp_path / 'no-policies'} does not exist"
    )
    # Nothing of the others lives on: the executor's Blender would have started by now.
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        assert bridge_pids(os.getpid()) == [], "a Blender bridge outlived the failed start"
        await asyncio.sleep(0.1)
    assert not (settings.home / "mesh.json").exists()  # the home is free for another mesh


async def test_start_when_the_cluster_has_no_majority_gives_up_at_its_deadline_saying_why(
    tmp_path: Path,
) -> None:
    cluster = NatsCluster(tmp_path / "cluster", None, "bmlone")
    url = await cluster.servers["n1"].start()  # n2 and n3 never come
    try:
        began = time.monotonic()
        with pytest.raises(JetStreamUnavailable) as raised:
            await Bus.open(url, "bmlone", "test-lone", replicas=3, ready_wait=2)
        assert time.monotonic() - began < 8
    finally:
        await cluster.stop()
    said = str(raised.value)
    assert said.startswith("JetStream was not ready within 2 s")
    assert "on a cluster, start its servers" in said and "BLENDMESH_START_WAIT" in said


async def test_served_gateway_when_its_server_ends_by_itself_reports_it(
    bus: Bus, settings: Settings
) -> None:
    server = GatewayServer(create_app(settings, bus, Tokens({})), port=0)
    served = ServedGateway(server)
    url = await server.start()
    failed = asyncio.ensure_future(served.failed())
    try:
        async with httpx.AsyncClient() as http:
            assert (await http.get(f"{url}/openapi.json")).status_code == 200
        assert not failed.done()
        server._server.should_exit = True  # uvicorn ends, as on a fatal error of its own
        error = await asyncio.wait_for(failed, 10)
        assert str(error) == "the HTTP gateway stopped serving"
    finally:
        failed.cancel()
        await served.stop()


async def test_served_gateway_when_stopped_never_reports_a_failure(
    bus: Bus, settings: Settings
) -> None:
    served = ServedGateway(GatewayServer(create_app(settings, bus, Tokens({})), port=0))
    await served.server.start()
    failed = asyncio.ensure_future(served.failed())
    await served.stop()
    await asyncio.sleep(0.3)
    assert not failed.done()
    failed.cancel()
