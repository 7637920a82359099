"""The JetStream API is least privilege: no role but admin administers streams or another
role's consumers, and nothing the server writes on a role's behalf lands in the event space.

Every test starts a real nats-server with blendmesh's users (docs/adr/0007). A refused
request is dropped by the server and only reported to the client asynchronously, so a
refusal shows up here as a request that gets no answer. Each wait for one runs beside an
admin request the server must answer within the same wait (``checked``), so a request that
goes unanswered was refused, not merely slow.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from nats.aio.msg import Msg
from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    KeyValueConfig,
    RePublish,
    StorageType,
    StreamConfig,
)
from nats.js.errors import KeyNotFoundError, NotFoundError

from contracts import subjects
from contracts.events import AnyEvent, Event, RunRequested
from services.runtime.nats import access
from services.runtime.server.embedded import EmbeddedNats
from services.runtime.service.consumer import ConsumerLoop
from services.runtime.service.consumer_spec import ConsumerSpec, Delivery
from services.runtime.service.host import Bus

pytestmark = pytest.mark.integration

PREFIX = "bmsec"
STREAM = subjects.stream_name(PREFIX)
ALLOWLIST = access.bucket(PREFIX, "allowlist")
# A refused request is never answered, and an allowed one is answered in milliseconds (the
# admin control in ``checked`` proves it each time): waiting longer only slows the tests.
DENIED_WAIT = 0.5
CONTROL = f"$JS.API.STREAM.INFO.{STREAM}"  # an admin request answered as fast as any
SERVICES = ("planner", "policy", "executor", "audit")
NON_ADMIN = (access.CLIENT, access.DOOR, *SERVICES)


@dataclass(frozen=True)
class Server:
    url: str
    credentials: Path


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[Server]:
    credentials = tmp_path / "nats-credentials.json"
    nats = EmbeddedNats.secured(tmp_path / "nats", credentials, PREFIX)
    url = await nats.start()
    admin = await Bus.open(url, PREFIX, "test-admin", access.login_for(credentials, access.ADMIN))
    try:  # a store the mesh prepares before its services start
        await admin.js.create_key_value(KeyValueConfig(bucket=ALLOWLIST, storage=StorageType.FILE))
    finally:
        await admin.close()
    try:
        yield Server(url, credentials)
    finally:
        await nats.stop()


@pytest.fixture
async def buses(server: Server) -> AsyncIterator[Callable[[str], Awaitable[Bus]]]:
    """Log in as a role; every bus opened is closed after the test."""
    opened: list[Bus] = []

    async def open_as(role: str) -> Bus:
        login = access.login_for(server.credentials, role)
        opened.append(await Bus.open(server.url, PREFIX, f"test-{role}", login))
        return opened[-1]

    try:
        yield open_as
    finally:
        for bus in opened:
            await bus.close()


async def answer(bus: Bus, subject: str, body: Any = None) -> dict[str, Any] | None:
    """The JetStream API's answer to a request, or None when the server refused it."""
    data = b"" if body is None else json.dumps(body).encode()
    try:
        reply = await bus.nc.request(subject, data, timeout=DENIED_WAIT)
    except TimeoutError:
        return None
    if not reply.data:  # a status-only answer, e.g. no message to pull
        return {"status": dict(reply.headers or {})}
    result: dict[str, Any] = json.loads(reply.data)
    return result


async def refused(bus: Bus, subject: str, body: Any = None) -> bool:
    return await answer(bus, subject, body) is None


async def checked(admin: Bus, *asking: Awaitable[Any]) -> list[Any]:
    """What ``asking`` came to, run at once beside an admin request of the JetStream API
    that must be answered within DENIED_WAIT: the proof that an answer the server meant to
    give would have arrived in time, so an unanswered request was refused."""
    *results, control = await asyncio.gather(*asking, answer(admin, CONTROL))
    assert control is not None and "error" not in control, control
    return results


async def logged(bus: Bus, subject: str) -> int:
    """How many messages of the event log match ``subject``."""
    info = await bus.js.stream_info(STREAM, subjects_filter=subject)
    return sum((info.state.subjects or {}).values())


def push(deliver: str, filter_subject: str, name: str | None = None) -> dict[str, Any]:
    config = ConsumerConfig(
        name=name,
        deliver_subject=deliver,
        filter_subject=filter_subject,
        ack_policy=AckPolicy.NONE,
    )
    return {"stream_name": STREAM, "config": config.as_dict()}


async def test_client_when_creating_a_stream_that_republishes_into_approved_is_refused(
    buses: Callable[[str], Awaitable[Bus]],
) -> None:
    client = await buses(access.CLIENT)
    admin = await buses(access.ADMIN)
    forged = subjects.run_events(PREFIX, "forged", "approved")
    bait = subjects.query(PREFIX, "bait")  # the client may publish here; no stream keeps it
    evil = StreamConfig(
        name="EVIL",
        subjects=[bait],
        storage=StorageType.MEMORY,
        republish=RePublish(src=bait, dest=forged),
    )
    [created] = await checked(admin, answer(client, "$JS.API.STREAM.CREATE.EVIL", evil.as_dict()))
    await client.nc.publish(bait, b'{"type": "run.approved", "run_id": "forged"}')
    await client.nc.flush()
    await asyncio.sleep(0.5)
    assert await logged(client, forged) == 0, "the server republished a forged approval"
    assert created is None


async def test_client_when_pushing_log_messages_into_the_event_space_is_refused_or_unheard(
    buses: Callable[[str], Awaitable[Bus]],
) -> None:
    client = await buses(access.CLIENT)
    admin = await buses(access.ADMIN)
    bait = subjects.run_events(PREFIX, "bait", "requested")
    await client.js.publish(bait, b'{"granted": "by nobody"}')
    forged_kv = f"$KV.{ALLOWLIST}.forged"
    approved = subjects.run_events(PREFIX, "forged", "approved")
    # Where a subject permission can see it: a consumer on a bucket the client does not
    # own, or one whose name (and so whose config) the server takes from the request body.
    kv_stream = f"KV_{ALLOWLIST}"
    kv_push = push(approved, f"$KV.{ALLOWLIST}.>", name="push")
    kv_push["stream_name"] = kv_stream
    on_kv, ephemeral, cycle = await checked(
        admin,
        refused(client, f"$JS.API.CONSUMER.CREATE.{kv_stream}.push", kv_push),
        refused(client, f"$JS.API.CONSUMER.CREATE.{STREAM}", push(forged_kv, bait)),
        # The server itself refuses a consumer of the log that delivers into the log.
        answer(client, f"$JS.API.CONSUMER.CREATE.{STREAM}.loop", push(approved, bait, "loop")),
    )
    assert on_kv
    assert ephemeral
    assert cycle is not None and "error" in cycle
    # A named consumer of the log may carry any deliver subject, but a push consumer only
    # delivers while someone subscribes to it, and no user may subscribe in the event space.
    named = push(forged_kv, bait, name="unheard")
    made = await answer(client, f"$JS.API.CONSUMER.CREATE.{STREAM}.unheard.{bait}", named)
    assert made is not None
    listeners = [admin, *[await buses(role) for role in NON_ADMIN]]
    for listener in listeners:
        await listener.nc.subscribe(forged_kv)
        await listener.nc.subscribe(approved)
        await listener.nc.flush()
    await asyncio.sleep(1.5)
    kv = await client.js.key_value(ALLOWLIST)
    with pytest.raises(KeyNotFoundError):
        await kv.get("forged")
    assert await logged(client, approved) == 0


@pytest.mark.parametrize("role", [access.CLIENT, "planner", "audit"])
async def test_role_when_deleting_or_replacing_the_executors_consumer_is_refused(
    buses: Callable[[str], Awaitable[Bus]], role: str
) -> None:
    executor = await buses("executor")
    spec = ConsumerSpec(
        durable="executor",
        filter_subjects=[subjects.any_run(PREFIX, "approved")],
        handler=_ignore,
    )
    await executor.js.add_consumer(STREAM, spec.config())
    before = (await executor.js.consumer_info(STREAM, "executor")).config
    other = await buses(role)
    api = "$JS.API.CONSUMER"
    nothing = subjects.any_run(PREFIX, "nothing")
    stolen = {"durable_name": "executor", "filter_subjects": [nothing], "ack_policy": "explicit"}
    # The legacy ephemeral subject names no consumer: the name in the body picks one.
    renamed = {"name": "executor", "filter_subjects": [nothing], "ack_policy": "explicit"}
    attempts = [
        (f"{api}.DELETE.{STREAM}.executor", None),
        (f"{api}.DURABLE.CREATE.{STREAM}.executor", {"stream_name": STREAM, "config": stolen}),
        (f"{api}.CREATE.{STREAM}.executor", {"stream_name": STREAM, "config": renamed}),
        (f"{api}.CREATE.{STREAM}", {"stream_name": STREAM, "config": renamed}),
        (f"{api}.MSG.NEXT.{STREAM}.executor", {"batch": 1, "no_wait": True}),
    ]
    admin = await buses(access.ADMIN)
    *results, decoy = await checked(
        admin,
        *(refused(other, s, b) for s, b in attempts),
        # With a name in the subject, the server goes by it, never by the one in the body.
        answer(other, f"{api}.CREATE.{STREAM}.decoy", {"stream_name": STREAM, "config": renamed}),
    )
    after = (await executor.js.consumer_info(STREAM, "executor")).config
    assert after == before
    assert decoy is None or decoy.get("name") != "executor"
    assert dict(zip([s for s, _ in attempts], results, strict=True)) == {
        s: True for s, _ in attempts
    }


@pytest.mark.parametrize("role", NON_ADMIN)
async def test_role_when_creating_updating_or_deleting_a_stream_is_refused(
    buses: Callable[[str], Awaitable[Bus]], role: str
) -> None:
    bus = await buses(role)
    api = "$JS.API.STREAM"
    kv_stream = f"KV_{ALLOWLIST}"
    fresh = StreamConfig(name="FRESH", subjects=["fresh.>"], storage=StorageType.MEMORY)
    widened = StreamConfig(name=STREAM, subjects=[*subjects.stream_subjects(PREFIX), "more.>"])
    attempts = [
        (f"{api}.CREATE.FRESH", fresh.as_dict()),
        (f"{api}.CREATE.KV_{PREFIX}_newbucket", {"name": f"KV_{PREFIX}_newbucket"}),
        (f"{api}.UPDATE.{STREAM}", widened.as_dict()),
        (f"{api}.UPDATE.{kv_stream}", {"name": kv_stream, "subjects": [">"]}),
        (f"{api}.DELETE.{kv_stream}", None),
        (f"{api}.PURGE.{kv_stream}", None),
        (f"{api}.MSG.DELETE.{kv_stream}", {"seq": 1}),
        (f"{api}.RESTORE.FRESH", {"config": fresh.as_dict()}),
        (f"{api}.SNAPSHOT.{kv_stream}", {"deliver_subject": f"$KV.{ALLOWLIST}.snap"}),
    ]
    admin = await buses(access.ADMIN)
    results = await checked(admin, *(refused(bus, s, b) for s, b in attempts))
    assert dict(zip([s for s, _ in attempts], results, strict=True)) == {
        s: True for s, _ in attempts
    }
    with pytest.raises(NotFoundError, match="stream not found"):
        await bus.js.stream_info("FRESH")


async def _ignore(event: AnyEvent, delivery: Delivery) -> Sequence[Event]:
    return []


def _requested(run_id: str) -> RunRequested:
    return RunRequested(
        event_id=f"e-{run_id}",
        at=1.0,
        run_id=run_id,
        request_id="req",
        thread_id="t",
        user="u",
        scene_id="s",
        prompt="add a cube",
    )


async def _until(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.1)
    return True


@pytest.mark.parametrize("tamper", ["deleted", "changed"])
async def test_service_when_its_durable_consumer_is_tampered_with_restores_it_and_warns(
    buses: Callable[[str], Awaitable[Bus]], caplog: pytest.LogCaptureFixture, tamper: str
) -> None:
    caplog.set_level(logging.WARNING, logger="blendmesh.consumer")
    planner = await buses("planner")
    admin = await buses(access.ADMIN)
    client = await buses(access.CLIENT)
    seen: list[str] = []

    async def handle(event: AnyEvent, delivery: Delivery) -> Sequence[Event]:
        seen.append(getattr(event, "run_id", ""))
        return []

    spec = ConsumerSpec(
        durable="planner",
        filter_subjects=[subjects.any_run(PREFIX, "requested")],
        handler=handle,
        # Checked every half second rather than every five: the loop finds the tampering
        # as a running service does, only sooner.
        check_interval=0.5,
    )
    loop = ConsumerLoop(planner.js, planner.publisher, PREFIX, spec)
    await loop.start()
    try:
        await client.publisher.publish(_requested("before"))
        assert await _until(lambda: "before" in seen, 10)
        if tamper == "deleted":
            await admin.js.delete_consumer(STREAM, "planner")
        else:
            hijacked = spec.config()
            hijacked.filter_subjects = [subjects.any_run(PREFIX, "nothing")]
            hijacked.max_deliver = 1
            await admin.js.add_consumer(STREAM, hijacked)
        await client.publisher.publish(_requested("after"))
        assert await _until(lambda: "after" in seen, 20), seen
    finally:
        await loop.stop()
    info = await admin.js.consumer_info(STREAM, "planner")
    assert info.config.filter_subjects == spec.config().filter_subjects
    assert info.config.max_deliver == spec.max_deliver
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("planner" in w and tamper in w for w in warnings), warnings
    if tamper == "changed":
        assert any("filter_subjects" in w and "max_deliver" in w for w in warnings), warnings


async def test_role_when_listening_to_another_roles_inbox_hears_nothing(
    buses: Callable[[str], Awaitable[Bus]],
) -> None:
    """Replies and consumer deliveries are private: no role learns another's inbox names,
    which a push consumer could otherwise aim its deliveries at."""
    client = await buses(access.CLIENT)
    heard: list[str] = []

    async def hear(msg: Msg) -> None:
        heard.append(msg.subject)

    for inbox in ("_INBOX.>", f"{access.inbox_prefix('planner')}.>"):
        await client.nc.subscribe(inbox, cb=hear)
    await client.nc.flush()
    planner = await buses("planner")
    await planner.js.stream_info(STREAM)  # a JetStream request: its reply goes to an inbox
    await asyncio.sleep(0.5)
    assert heard == []


@pytest.mark.parametrize("role", NON_ADMIN)
async def test_role_when_listing_or_inspecting_the_logs_consumers_is_refused(
    buses: Callable[[str], Awaitable[Bus]], role: str
) -> None:
    """A consumer's info shows its deliver subject, another login's inbox that a push
    consumer could be aimed at (docs/adr/0015): only admin lists the logs' consumers."""
    executor = await buses("executor")
    spec = ConsumerSpec(
        durable="executor", filter_subjects=[subjects.any_run(PREFIX, "approved")], handler=_ignore
    )
    await executor.js.add_consumer(STREAM, spec.config())
    bus = await buses(role)
    api = "$JS.API.CONSUMER"
    attempts = [f"{api}.LIST.{STREAM}", f"{api}.NAMES.{STREAM}"]
    if role != "executor":
        attempts.append(f"{api}.INFO.{STREAM}.executor")
    admin = await buses(access.ADMIN)
    results = await checked(admin, *(refused(bus, s) for s in attempts))
    assert dict(zip(attempts, results, strict=True)) == dict.fromkeys(attempts, True)
    assert not await refused(admin, f"{api}.NAMES.{STREAM}")
