"""NATS users per service role against a real nats-server: who may write what."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from nats.js.errors import NoStreamResponseError

from contracts import subjects
from services.runtime.nats import access
from services.runtime.nats.bus import connect
from services.runtime.nats.history import read_run
from services.runtime.nats.login import LoginRefused
from services.runtime.nats.streams import ensure_event_log, ensure_kv
from services.runtime.server.embedded import EmbeddedNats, prepare_streams
from services.runtime.service.host import Bus

pytestmark = pytest.mark.integration

PREFIX = "bmacl"
# A refused publish is dropped by the server and never acknowledged: waiting long for the
# acknowledgement only slows the test down.
DENIED_WAIT = 1.0


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


async def publish_refused(bus: Bus, subject: str, data: bytes = b"{}") -> bool:
    js = bus.nc.jetstream(timeout=DENIED_WAIT)
    try:
        await js.publish(subject, data)
    except (TimeoutError, NoStreamResponseError):
        return True
    except Exception as exc:  # noqa: BLE001 - nats-py reports a dropped publish as a timeout
        return "timeout" in str(exc).lower()
    return False


async def test_connect_when_anonymous_is_refused_with_what_to_do(
    secured: tuple[str, Path],
) -> None:
    with pytest.raises(LoginRefused, match="refused an anonymous client") as info:
        await connect(secured[0], "anon", None, wait=2)
    assert "BLENDMESH_NATS_CREDENTIALS" in str(info.value)


async def test_connect_when_password_wrong_is_refused_naming_the_user(
    secured: tuple[str, Path],
) -> None:
    with pytest.raises(LoginRefused, match="refused user 'client'"):
        await connect(secured[0], "wrong", access.Login("client", "not-the-password"), wait=2)


async def test_client_when_publishing_approved_is_refused_and_log_keeps_nothing(
    secured: tuple[str, Path],
) -> None:
    client = await as_role(secured, access.CLIENT)
    policy = await as_role(secured, "policy")
    try:
        forged = subjects.run_events(PREFIX, "forged", "approved")
        assert await publish_refused(client, forged)
        assert await publish_refused(client, subjects.run_events(PREFIX, "forged", "op_started"))
        assert not await publish_refused(client, subjects.run_events(PREFIX, "ok", "requested"))
        assert not await publish_refused(policy, subjects.run_events(PREFIX, "ok", "approved"))
        assert await read_run(client.js, PREFIX, "forged") == []
        assert len(await read_run(client.js, PREFIX, "ok")) == 0  # raw bytes: not events
        info = await client.js.stream_info(subjects.stream_name(PREFIX))
        assert info.state.messages == 2
    finally:
        await client.close()
        await policy.close()


@pytest.mark.parametrize(
    ("role", "kind", "allowed"),
    [
        ("planner", "planned", True),
        ("planner", "approved", False),
        ("policy", "op_succeeded", False),
        ("executor", "op_succeeded", True),
        ("executor", "approved", False),
        ("audit", "completed", False),
    ],
)
async def test_role_when_publishing_run_event_follows_the_table(
    secured: tuple[str, Path], role: str, kind: str, allowed: bool
) -> None:
    bus = await as_role(secured, role)
    try:
        refused = await publish_refused(bus, subjects.run_events(PREFIX, "r", kind))
        assert refused is not allowed
    finally:
        await bus.close()


async def test_services_when_asked_to_delete_or_rewrite_the_log_are_refused(
    secured: tuple[str, Path],
) -> None:
    executor = await as_role(secured, "executor")
    stream = subjects.stream_name(PREFIX)
    try:
        api = "$JS.API.STREAM"
        for request in (f"{api}.DELETE.{stream}", f"{api}.UPDATE.{stream}"):
            with pytest.raises(Exception, match="timeout"):
                await executor.nc.request(request, b"{}", timeout=DENIED_WAIT)
        await ensure_event_log(executor.js, PREFIX)  # creating it again is harmless
        assert (await executor.js.stream_info(stream)).config.deny_delete
    finally:
        await executor.close()


async def test_kv_when_written_by_a_role_that_does_not_own_it_is_refused(
    secured: tuple[str, Path],
) -> None:
    policy = await as_role(secured, "policy")
    client = await as_role(secured, access.CLIENT)
    try:
        bucket = access.bucket(PREFIX, "allowlist")
        kv = await ensure_kv(policy.js, PREFIX, "allowlist")  # the admin created it
        await kv.put("entry", b"granted by policy")
        assert await publish_refused(client, f"$KV.{bucket}.entry", b"granted by nobody")
        assert (await kv.get("entry")).value == b"granted by policy"
    finally:
        await policy.close()
        await client.close()


async def test_executor_when_replacing_a_preview_may_purge_its_object_store(
    secured: tuple[str, Path],
) -> None:
    from services.executor.adapters.previews import ObjectStorePreviews

    executor = await as_role(secured, "executor")
    try:
        previews = ObjectStorePreviews(executor.js, PREFIX)
        await previews.put("scene", b"\x89PNG first")
        await previews.put("scene", b"\x89PNG second")
        assert await previews.get("scene") == b"\x89PNG second"
    finally:
        await executor.close()


def test_credentials_when_created_are_private_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "home" / "nats-credentials.json"
    first = access.load_or_create(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert access.load_or_create(path) == first
    assert set(first) == set(access.ROLES) and len(set(first.values())) == len(first)
    assert "password" not in repr(access.login_for(path, "executor"))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "is not a blendmesh credentials file"),
        (json.dumps({"version": 1, "users": {"client": "x"}}), "has no password for admin"),
    ],
)
def test_credentials_when_file_is_broken_say_how_to_recover(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "nats-credentials.json"
    path.write_text(content)
    with pytest.raises(access.CredentialsError, match=message) as info:
        access.login_for(path, "client")
    assert "delete it and restart the mesh" in str(info.value)


def test_permissions_when_role_unknown_raise() -> None:
    with pytest.raises(ValueError, match="unknown role 'intruder'"):
        access.permissions("intruder", PREFIX)


async def test_service_process_when_login_refused_exits_saying_why(
    secured: tuple[str, Path], tmp_path: Path
) -> None:
    stale = tmp_path / "stale-credentials.json"
    access.load_or_create(stale)  # another home's passwords
    env = {
        **os.environ,
        "NATS_URL": secured[0],
        "BLENDMESH_PREFIX": PREFIX,
        "BLENDMESH_NATS_CREDENTIALS": str(stale),
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "services.audit",
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode == 1
    assert "audit: NATS at" in err.decode() and "refused user 'audit'" in err.decode()
    assert "Traceback" not in err.decode()
