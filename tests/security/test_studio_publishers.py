"""Project and lock events are the doors' alone to publish, as the server enforces it: a
service role cannot forge a member or break a lock, and a person's own NKey login cannot
publish either (it may only ask the bus door, which checks its role first)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from nats.aio.client import Client
from nats.errors import Error as NatsError

from contracts import event_kinds, subjects
from services.runtime.nats import access
from services.runtime.server.embedded import EmbeddedNats, prepare_streams
from services.runtime.service.host import Bus
from tests.integration.test_access import publish_refused
from tests.support.signing import register

pytestmark = pytest.mark.integration

PREFIX = "bmstsec"
MEMBER = subjects.project_events(PREFIX, "shot010", "member_added")
BROKEN = subjects.lock_events(PREFIX, "shot", "broken")


@pytest.fixture
async def secured(tmp_path: Path) -> AsyncIterator[tuple[str, Path, bytes]]:
    credentials = tmp_path / "nats-credentials.json"
    seed = register(tmp_path, "mallory")
    server = EmbeddedNats.secured(
        tmp_path / "nats", credentials, PREFIX, registry=tmp_path / "users.toml",
        watch_interval=0.1,
    )  # fmt: skip
    url = await server.start()
    await prepare_streams(url, PREFIX, access.login_for(credentials, access.ADMIN))
    try:
        yield url, credentials, seed
    finally:
        await server.stop()


def test_table_when_read_lets_only_the_doors_publish_project_and_lock_events() -> None:
    kinds = {(k.family, k.name) for k in event_kinds.STUDIO_EVENT_KINDS}
    assert ("lock", "broken") in kinds and ("project", "member_added") in kinds
    for role in (access.CLIENT, access.DOOR):
        assert set(event_kinds.studio_published_by(role)) == kinds
    for role in access.SERVICE_ROLES:
        assert event_kinds.studio_published_by(role) == ()
        allowed = access.permissions(role, PREFIX)["publish"]["allow"]
        assert not [s for s in allowed if ".project." in s or ".lock." in s]
    mine = access.user_permissions("mallory", PREFIX)["publish"]["allow"]
    assert mine == [subjects.door_api(PREFIX, "mallory", ">")]


@pytest.mark.parametrize("role", ["executor", "planner", "policy", "audit", "guardians"])
async def test_service_when_publishing_a_member_or_a_break_is_refused(
    secured: tuple[str, Path, bytes], role: str
) -> None:
    url, credentials, _ = secured
    bus = await Bus.open(url, PREFIX, f"test-{role}", access.login_for(credentials, role))
    try:
        assert await publish_refused(bus, MEMBER)
        assert await publish_refused(bus, BROKEN)
    finally:
        await bus.close()
    client = await Bus.open(url, PREFIX, "test-client", access.login_for(credentials, "client"))
    try:
        assert not await publish_refused(client, MEMBER)  # the control: the doors may
    finally:
        await client.close()


async def test_users_own_login_when_publishing_a_member_or_a_break_is_refused(
    secured: tuple[str, Path, bytes],
) -> None:
    url, _, seed = secured
    errors: list[Exception] = []

    async def on_error(exc: Exception) -> None:
        errors.append(exc)

    nc = Client()
    for _ in range(50):  # the server admits a key registered before it started at once
        try:
            await nc.connect(
                url, nkeys_seed_str=seed.decode(), error_cb=on_error, allow_reconnect=False,
                inbox_prefix=access.user_inbox_prefix("mallory"),
            )  # fmt: skip
            break
        except (NatsError, OSError):
            await nc.close()
            nc = Client()
            await asyncio.sleep(0.1)
    try:
        await nc.publish(MEMBER, b'{"type":"project.member_added"}')
        await nc.publish(BROKEN, b'{"type":"lock.broken"}')
        await nc.flush()
        for _ in range(50):
            if len(errors) >= 2:
                break
            await asyncio.sleep(0.05)
        assert len(errors) >= 2 and all("permissions violation" in str(e).lower() for e in errors)
    finally:
        await nc.close()
