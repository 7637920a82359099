"""The audit stream against a real nats-server with blendmesh's users: only the audit
service writes it, every role reads it, and nobody deletes or purges it.

A refused request is dropped and never answered. Each wait for an answer that must not come
runs beside a request of the same kind from a login allowed to make it, which must be
answered within the same wait: so an unanswered request was refused, not slow."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from nats.js.api import DeliverPolicy
from nats.js.errors import NoStreamResponseError

from contracts import subjects
from services.runtime.nats import access
from services.runtime.server.embedded import EmbeddedNats, prepare_streams
from services.runtime.service.host import Bus

pytestmark = pytest.mark.integration

PREFIX = "bmaud"
STREAM = subjects.audit_stream_name(PREFIX)
DENIED_WAIT = 0.5  # a refused request is never answered; an allowed one in milliseconds


@pytest.fixture
async def secured(tmp_path: Path) -> AsyncIterator[tuple[str, Path]]:
    credentials = tmp_path / "nats-credentials.json"
    server = EmbeddedNats.secured(tmp_path / "nats", credentials, PREFIX)
    url = await server.start()
    await prepare_streams(url, PREFIX, access.login_for(credentials, access.ADMIN))
    try:
        yield url, credentials
    finally:
        await server.stop()


async def as_role(secured: tuple[str, Path], role: str) -> Bus:
    url, credentials = secured
    return await Bus.open(url, PREFIX, f"test-{role}", access.login_for(credentials, role))


async def publish_refused(bus: Bus, subject: str) -> bool:
    js = bus.nc.jetstream(timeout=DENIED_WAIT)
    try:
        await js.publish(subject, b"{}")
    except (TimeoutError, NoStreamResponseError):
        return True
    except Exception as exc:  # noqa: BLE001 - nats-py reports a dropped publish as a timeout
        return "timeout" in str(exc).lower()
    return False


@pytest.mark.parametrize("role", [access.CLIENT, "planner", "policy", "executor", "guardians"])
async def test_audit_stream_when_a_role_but_audit_publishes_is_refused(
    secured: tuple[str, Path], role: str
) -> None:
    bus = await as_role(secured, role)
    audit = await as_role(secured, "audit")
    control = subjects.audit_records(PREFIX, "control", "s", "r")
    try:
        refused, audit_refused = await asyncio.gather(
            publish_refused(bus, subjects.audit_records(PREFIX, "ana", "s", "r")),
            publish_refused(audit, control),  # acknowledged within the same wait
        )
        assert refused
        assert not audit_refused
        info = await bus.js.stream_info(STREAM, subjects_filter=">")
        assert info.state.messages == 1 and info.state.subjects == {control: 1}  # audit's only
    finally:
        await bus.close()
        await audit.close()


async def test_audit_stream_when_audit_publishes_a_client_replays_it(
    secured: tuple[str, Path],
) -> None:
    audit = await as_role(secured, "audit")
    client = await as_role(secured, access.CLIENT)
    try:
        assert not await publish_refused(audit, subjects.audit_records(PREFIX, "ana", "s", "r"))
        sub = await client.js.subscribe(
            subjects.audit_records(PREFIX, user="ana"),
            ordered_consumer=True,
            deliver_policy=DeliverPolicy.ALL,
            stream=STREAM,
        )
        try:
            assert (await sub.next_msg(timeout=5)).data == b"{}"
        finally:
            await sub.unsubscribe()
    finally:
        await audit.close()
        await client.close()


@pytest.mark.parametrize("role", ["audit", access.CLIENT])
@pytest.mark.clause("002-§audit.9")
async def test_audit_stream_when_asked_to_delete_purge_or_change_it_is_refused(
    secured: tuple[str, Path], role: str
) -> None:
    bus = await as_role(secured, role)
    admin = await as_role(secured, access.ADMIN)

    async def unanswered(verb: str) -> None:
        with pytest.raises(Exception, match="timeout"):
            await bus.nc.request(f"$JS.API.STREAM.{verb}.{STREAM}", b"{}", timeout=DENIED_WAIT)

    try:
        # The control: the admin's request of the same API, answered within the same wait.
        *_, control = await asyncio.gather(
            *(unanswered(verb) for verb in ("DELETE", "PURGE", "UPDATE")),
            admin.nc.request(f"$JS.API.STREAM.INFO.{STREAM}", b"", timeout=DENIED_WAIT),
        )
        assert b'"error"' not in control.data, control.data
        info = await bus.js.stream_info(STREAM)
        assert info.config.deny_delete and info.config.deny_purge
    finally:
        await bus.close()
        await admin.close()
