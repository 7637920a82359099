"""Who may ask and who may answer the NATS services API, on a real server with blendmesh's
users (docs/adr/0017). An answer goes wherever the request's reply subject says, so no
login may both ask and answer, and a service answers only into an inbox."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from typing import Any

import pytest
from nats.aio.client import Client

from contracts import subjects
from services.doors.cli.mesh import Mesh
from services.runtime.nats import access
from services.runtime.nats.bus import connect
from services.runtime.nats.retry import poll
from services.runtime.service import health
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.meshes import bare_mesh_fixture, role_bus

PREFIX = "bmsrv"
LOG = subjects.stream_name(PREFIX)
QUIET = 0.5


# One mesh serves the module: each test stops what it registered, and compares the log
# with itself only, before and after.
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(home=tmp_path_factory.mktemp("home"), prefix=PREFIX)


mesh = bare_mesh_fixture()


def violations(nc: Client) -> list[str]:
    return [str(e) for e in getattr(nc, "errors", [])]


async def logged_in(mesh: Mesh, role: str) -> Client:
    """A bare connection as ``role``, its asynchronous errors kept in ``nc.errors``."""
    errors: list[Exception] = []

    async def keep(exc: Exception) -> None:
        errors.append(exc)

    nc = await connect(mesh.url, f"test-{role}", mesh.login(role), wait=5)
    nc._error_cb = keep
    nc.errors = errors  # type: ignore[attr-defined]
    return nc


class _Link:
    def __init__(self, nc: Client) -> None:
        self.nc = nc
        self.prefix = PREFIX


async def test_every_service_role_when_registered_is_answered_to_the_client(
    mesh: Mesh,
) -> None:
    roles = (*access.SERVICE_ROLES, access.DOOR)
    async with AsyncExitStack() as stack:
        client = await stack.enter_async_context(role_bus(mesh, access.CLIENT))
        registered: dict[str, health.Registration] = {}
        for role in roles:
            own = await stack.enter_async_context(role_bus(mesh, role))
            registered[role] = await health.register(own, role)
            stack.push_async_callback(registered[role].stop)
        # Every role at once, each answered by its own login only. A generous window: on
        # a busy machine an answer can take a moment.
        found = await asyncio.gather(
            *(health.ping(client.nc, role, wait=1.5, prefix=PREFIX) for role in roles)
        )
        assert {role: [p.id for p in pings] for role, pings in zip(roles, found, strict=True)} == {
            role: [registered[role].id] for role in roles
        }


async def test_client_when_listening_to_the_services_api_to_answer_it_is_refused(
    mesh: Mesh,
) -> None:
    client = await logged_in(mesh, access.CLIENT)
    heard: list[str] = []

    async def hear(msg: Any) -> None:
        heard.append(msg.subject)

    try:
        await client.subscribe("$SRV.>", cb=hear)
        await client.flush()
        await client.publish("$SRV.PING", b"", reply=f"{PREFIX}.run.forged.approved")
        await client.flush()
        await asyncio.sleep(QUIET)
        assert heard == []
        assert any("permissions violation for subscription" in v for v in violations(client))
    finally:
        await client.close()


async def test_service_when_asked_to_answer_into_the_log_or_the_jetstream_api_does_not(
    mesh: Mesh,
) -> None:
    async with role_bus(mesh, "policy") as policy, role_bus(mesh, access.CLIENT) as client:
        registered = await health.register(policy, "policy")
        try:
            before = (await client.js.stream_info(LOG)).state.messages
            for reply in (
                subjects.run_events(PREFIX, "forged", "approved"),
                f"$JS.API.STREAM.DELETE.{LOG}",
                f"$KV.{access.bucket(PREFIX, 'allowlist')}.forged",
            ):
                for verb in ("PING", "INFO", "STATS"):
                    await client.nc.publish(f"$SRV.{verb}.blendmesh-policy", b"", reply=reply)
            await client.nc.flush()
            # The quiet wait and a ping, which waits as long, at once: the service still
            # answers into an inbox.
            _, pings = await asyncio.gather(
                asyncio.sleep(QUIET), health.ping(client.nc, "policy", QUIET, PREFIX)
            )
            after = await client.js.stream_info(LOG)  # still there, and nothing was added
            assert after.state.messages == before
            assert len(pings) == 1
        finally:
            await registered.stop()


async def test_gateway_login_when_publishing_anything_but_an_answer_is_refused(
    mesh: Mesh,
) -> None:
    gateway = await logged_in(mesh, access.GATEWAY)
    client: Bus | None = None
    try:
        registered = await health.register(_Link(gateway), access.GATEWAY)
        client = await Bus.open(mesh.url, PREFIX, "test-client", mesh.login(access.CLIENT))
        [found] = await health.ping(client.nc, access.GATEWAY, prefix=PREFIX)
        assert found.id == registered.id  # it answers
        before = (await client.js.stream_info(LOG)).state.messages
        await gateway.publish(subjects.run_events(PREFIX, "forged", "requested"), b"{}")
        await gateway.publish("$SRV.PING.blendmesh-gateway", b"", reply="_INBOX.gateway.x")
        await gateway.flush()

        async def refusals() -> list[str]:
            return [v for v in violations(gateway) if "violation for publish" in v]

        # Not a fixed pause: the server handles a login's messages in order, so once it
        # has refused both, neither was passed on, nor can be later.
        await poll(refusals, lambda found: len(found) >= 2, 10, pause=0.02)
        assert (await client.js.stream_info(LOG)).state.messages == before
        published = [v for v in violations(gateway) if "violation for publish" in v]
        assert len(published) == 2, violations(gateway)
        await registered.stop()
    finally:
        if client is not None:
            await client.close()
        await gateway.close()
