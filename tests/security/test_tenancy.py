"""Tenancy the server enforces: a user's own login reaches only that user's door.

Each test starts a real nats-server with blendmesh's users and two registered people,
alice and bob, puts bob's data where the mesh keeps it (a run in the log, a scene head in
its bucket, a revision in the object store, an audit record), then logs in as alice with
her NKey and tries every class of JetStream API request on it, and the core subjects a
program would try next. The server refuses each one (docs/adr/0015): a refused request
is dropped and never answered, a refused subscription hears nothing. A wait for an answer
that must not come runs beside the same kind of request from a login allowed to make it,
which must be answered within that wait: so an unanswered request was refused, not slow.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig

from contracts import subjects
from contracts.events import RunRequested
from services.runtime.nats import access
from services.runtime.server import users
from services.runtime.server.embedded import EmbeddedNats, prepare_streams
from services.runtime.service import health
from services.runtime.service.host import Bus
from tests.support.signing import register

pytestmark = pytest.mark.integration

PREFIX = "bmten"
STREAM = subjects.stream_name(PREFIX)
AUDIT = subjects.audit_stream_name(PREFIX)
HEADS = access.bucket(PREFIX, "scene_heads")
SCENES = access.bucket(PREFIX, "scenes")
DENIED_WAIT = 0.5  # an allowed request is answered in milliseconds; the controls show it
BOB_RUN = "bobrun1"


@dataclass
class World:
    url: str
    home: Path
    server: EmbeddedNats
    alice: bytes
    bob: bytes

    def login(self, role: str) -> access.Login | None:
        return access.login_for(self.home / "nats-credentials.json", role)


async def connect_user(url: str, seed: bytes, user: str, **options: Any) -> Client:
    errors: list[Exception] = []

    async def on_error(exc: Exception) -> None:
        errors.append(exc)

    nc = Client()
    try:
        await nc.connect(
            url,
            nkeys_seed_str=seed.decode(),
            inbox_prefix=access.user_inbox_prefix(user),
            allow_reconnect=False,
            error_cb=on_error,
            **options,
        )
    except BaseException:
        await nc.close()  # a refused login's socket too
        raise
    nc.errors = errors  # type: ignore[attr-defined]
    return nc


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    home = tmp_path / "home"
    home.mkdir()
    alice, bob = register(home, "alice"), register(home, "bob")
    server = EmbeddedNats.secured(tmp_path / "nats", home / "nats-credentials.json", PREFIX)
    url = await server.start()
    found = World(url, home, server, alice, bob)
    await prepare_streams(url, PREFIX, found.login(access.ADMIN))
    client = await Bus.open(url, PREFIX, "test-client", found.login(access.CLIENT))
    executor = await Bus.open(url, PREFIX, "test-executor", found.login("executor"))
    try:  # bob's data, where the mesh keeps it
        await client.publisher.publish(
            RunRequested(
                event_id="e-bob",
                at=1.0,
                run_id=BOB_RUN,
                request_id="req",
                thread_id="bobthread",
                user="bob",
                scene_id="bobscene",
                prompt="bob's secret plans",
            )
        )
        heads = await executor.js.key_value(HEADS)
        await heads.put("bobscene", b'{"owner": "bob"}')
        store = await executor.js.object_store(SCENES)
        await store.put("bobscene/1", b"bob's blend")
    finally:
        await client.close()
        await executor.close()
    try:
        yield found
    finally:
        await server.stop()


async def answered(nc: Client, subject: str, body: Any = None) -> bool:
    data = b"" if body is None else json.dumps(body).encode()
    try:
        await nc.request(subject, data, timeout=DENIED_WAIT)
    except (TimeoutError, nats.errors.NoRespondersError):
        return False
    return True


def push(deliver: str, filter_subject: str, name: str, group: str | None = None) -> dict[str, Any]:
    config = ConsumerConfig(
        name=name,
        deliver_subject=deliver,
        deliver_group=group,
        filter_subject=filter_subject,
        ack_policy=AckPolicy.NONE,
    )
    return {"stream_name": STREAM, "config": config.as_dict()}


async def test_user_login_when_trying_every_jetstream_api_on_another_users_data_is_refused(
    world: World,
) -> None:
    alice = await connect_user(world.url, world.alice, "alice")
    admin = await Bus.open(world.url, PREFIX, "test-admin", world.login(access.ADMIN))
    try:
        bob_requested = subjects.run_events(PREFIX, BOB_RUN, "requested")
        api = "$JS.API"
        attempts: list[tuple[str, Any]] = [
            (f"{api}.INFO", None),
            (f"{api}.STREAM.NAMES", None),
            (f"{api}.STREAM.LIST", None),
            (f"{api}.STREAM.INFO.{STREAM}", None),
            (f"{api}.STREAM.MSG.GET.{STREAM}", {"last_by_subj": bob_requested}),
            (f"{api}.DIRECT.GET.{STREAM}", {"last_by_subj": bob_requested}),
            (f"{api}.DIRECT.GET.{STREAM}.{bob_requested}", None),
            (f"{api}.DIRECT.GET.KV_{HEADS}.$KV.{HEADS}.bobscene", None),
            (f"{api}.STREAM.MSG.GET.KV_{HEADS}", {"last_by_subj": f"$KV.{HEADS}.bobscene"}),
            (f"{api}.DIRECT.GET.OBJ_{SCENES}", {"last_by_subj": f"$O.{SCENES}.M.>"}),
            (f"{api}.CONSUMER.LIST.{STREAM}", None),
            (f"{api}.CONSUMER.NAMES.{STREAM}", None),
            (f"{api}.CONSUMER.INFO.{STREAM}.executor", None),
            (f"{api}.CONSUMER.CREATE.{STREAM}", push("_INBOX.u.alice.x", bob_requested, "a")),
            (
                f"{api}.CONSUMER.CREATE.{STREAM}.a.{bob_requested}",
                push("_INBOX.u.alice.x", bob_requested, "a"),
            ),
            (f"{api}.CONSUMER.DURABLE.CREATE.{STREAM}.a", push("_INBOX.u.alice.x", ">", "a")),
            (  # a KV watch is a consumer on the bucket's stream
                f"{api}.CONSUMER.CREATE.KV_{HEADS}.w.$KV.{HEADS}.>",
                {"stream_name": f"KV_{HEADS}", "config": {"name": "w"}},
            ),
            (  # an object get reads the store's chunks through a consumer
                f"{api}.CONSUMER.CREATE.OBJ_{SCENES}.o.$O.{SCENES}.C.>",
                {"stream_name": f"OBJ_{SCENES}", "config": {"name": "o"}},
            ),
            (  # push delivery into a service's queue group, or another login's inbox
                f"{api}.CONSUMER.CREATE.{STREAM}.q.{bob_requested}",
                push(subjects.query(PREFIX, "allowlist.revoke"), bob_requested, "q", "policy"),
            ),
            (
                f"{api}.CONSUMER.CREATE.{STREAM}.i.{bob_requested}",
                push("_INBOX.client.abc", bob_requested, "i"),
            ),
            (f"{api}.CONSUMER.MSG.NEXT.{STREAM}.executor", {"batch": 1}),
            (f"{api}.STREAM.SNAPSHOT.{STREAM}", {"deliver_subject": "_INBOX.u.alice.s"}),
            ("$SRV.PING", None),  # the services API: which services run, their consumers
            ("$SRV.STATS", None),
            ("$SRV.INFO.blendmesh-executor", None),
        ]
        # The control: the admin's reading of bob's request, answered within the same wait.
        control = (f"{api}.STREAM.MSG.GET.{STREAM}", {"last_by_subj": bob_requested})
        *results, controlled = await asyncio.gather(
            *(answered(alice, s, b) for s, b in attempts), answered(admin.nc, *control)
        )
        assert controlled, "the admin's request was not answered within the wait"
        assert dict(zip([s for s, _ in attempts], results, strict=True)) == {
            s: False for s, _ in attempts
        }
        violations = [str(e) for e in alice.errors]  # type: ignore[attr-defined]
        assert any("permissions violation for publish" in v for v in violations), violations
    finally:
        await alice.close()
        await admin.close()


async def test_user_login_when_listening_beyond_its_own_inbox_and_feed_hears_nothing(
    world: World,
) -> None:
    alice = await connect_user(world.url, world.alice, "alice")
    door = await Bus.open(world.url, PREFIX, "test-door", world.login(access.DOOR))
    heard: list[str] = []

    async def hear(msg: Msg) -> None:
        heard.append(msg.subject)

    try:
        for subject in (
            f"{PREFIX}.feed.bob.>",
            f"{PREFIX}.feed.>",
            "_INBOX.u.bob.>",
            "_INBOX.client.>",
            f"{PREFIX}.api.>",
            f"{PREFIX}.query.>",
            f"{PREFIX}.run.>",
            ">",
        ):
            await alice.subscribe(subject, cb=hear)
        await alice.flush()
        await door.nc.publish(subjects.feed(PREFIX, "bob", BOB_RUN, "requested"), b"{}")
        await door.nc.publish(subjects.feed(PREFIX, "alice", "arun", "requested"), b"{}")
        await door.nc.flush()
        await asyncio.sleep(0.5)
        assert heard == []  # not even her own feed: none of those subscriptions was allowed
        own = await connect_user(world.url, world.alice, "alice")
        try:
            await own.subscribe(subjects.any_feed(PREFIX, "alice"), cb=hear)
            await own.flush()
            mine = subjects.feed(PREFIX, "alice", "arun", "requested")
            for _ in range(30):  # her own feed reaches her, bob's never does
                await door.nc.publish(subjects.feed(PREFIX, "bob", BOB_RUN, "requested"), b"{}")
                await door.nc.publish(mine, b"{}")
                await door.nc.flush()
                await asyncio.sleep(0.1)
                if heard:
                    break
            assert heard and set(heard) == {mine}
        finally:
            await own.close()
    finally:
        await alice.close()
        await door.close()


async def test_user_login_when_publishing_as_another_user_or_a_service_is_dropped(
    world: World,
) -> None:
    alice = await connect_user(world.url, world.alice, "alice")
    door = await Bus.open(world.url, PREFIX, "test-door", world.login(access.DOOR))
    policy = await Bus.open(world.url, PREFIX, "test-policy", world.login("policy"))
    allowed = subjects.door_api(PREFIX, "alice", "runs.list")
    heard: list[str] = []
    arrived = asyncio.Event()

    async def hear(msg: Msg) -> None:
        heard.append(msg.subject)
        if msg.subject == allowed:
            arrived.set()

    try:
        await door.nc.subscribe(subjects.any_door_api(PREFIX), cb=hear)
        await policy.nc.subscribe(f"{PREFIX}.query.>", cb=hear)
        await door.nc.flush()
        await policy.nc.flush()
        for subject in (
            subjects.door_api(PREFIX, "bob", "run.events"),
            subjects.query(PREFIX, "allowlist.revoke"),
            subjects.query(PREFIX, "rebuild"),
            subjects.run_events(PREFIX, "forged", "requested"),
            subjects.run_events(PREFIX, "forged", "approval_resolved"),
            f"{PREFIX}.signed.forged.requested",
        ):
            await alice.publish(subject, b"{}")
        await alice.publish(allowed, b"{}")
        await alice.flush()
        # Her allowed publish went last: once it is heard (a loaded machine may take
        # seconds), any forged one the server let through was sent before it.
        await asyncio.wait_for(arrived.wait(), 30)
        await door.nc.flush()
        await policy.nc.flush()
        await asyncio.sleep(0.2)
        assert heard == [allowed]
        client = await Bus.open(world.url, PREFIX, "test-client", world.login(access.CLIENT))
        try:
            info = await client.js.stream_info(STREAM)
            assert info.state.messages == 1  # bob's request alone: nothing of alice's landed
        finally:
            await client.close()
    finally:
        await alice.close()
        await door.close()
        await policy.close()


async def test_user_login_when_pinging_or_reading_the_services_stats_gets_no_answer(
    world: World,
) -> None:
    policy = await Bus.open(world.url, PREFIX, "test-policy", world.login("policy"))
    client = await Bus.open(world.url, PREFIX, "test-client", world.login(access.CLIENT))
    registered = await health.register(
        policy, "policy", health.consumer_stats(policy.js, PREFIX, ["policy"])
    )
    alice = await connect_user(world.url, world.alice, "alice")
    raw = ("$SRV.PING", "$SRV.STATS", "$SRV.STATS.blendmesh-policy")
    try:
        # Alice's requests and the same ones from the client, allowed to ask, all at once:
        # the client's answers show that an answer to any of them arrives within the wait.
        client_ping, client_stats, alice_ping, alice_stats, *replies = await asyncio.gather(
            health.ping(client.nc, "policy", DENIED_WAIT, PREFIX),
            health.stats(client.nc, "policy", DENIED_WAIT, PREFIX),
            health.ping(alice, "policy", DENIED_WAIT),
            health.stats(alice, "policy", DENIED_WAIT),
            *(answered(client.nc, subject) for subject in raw),
            *(answered(alice, subject) for subject in raw),
        )
        assert len(client_ping) == 1 and len(client_stats) == 1  # it answers
        assert replies[: len(raw)] == [True] * len(raw), "the client's requests were answered"
        assert alice_ping == []
        assert alice_stats == []
        for subject, heard in zip(raw, replies[len(raw) :], strict=True):
            assert not heard, subject
        violations = [str(e) for e in alice.errors]  # type: ignore[attr-defined]
        assert any('publish to "$srv.stats.blendmesh-policy"' in v.lower() for v in violations)
    finally:
        await registered.stop()
        await alice.close()
        await client.close()
        await policy.close()


async def test_registry_when_changed_while_the_server_runs_admits_and_drops_logins(
    world: World, tmp_path: Path
) -> None:
    carol = register(world.home, "carol")  # after the server started
    nc = None
    for _ in range(50):  # the server reloads within about a second of the change
        try:
            nc = await connect_user(world.url, carol, "carol")
            break
        except nats.errors.Error:
            await asyncio.sleep(0.1)
    assert nc is not None, "carol could not log in after being added"
    closed = asyncio.Event()
    nc._closed_cb = _setter(closed)

    users.remove(world.home / users.FILE_NAME, "carol")
    await asyncio.wait_for(closed.wait(), 10)  # the server closes the removed user's login
    with pytest.raises(nats.errors.Error, match="Authorization"):
        await connect_user(world.url, carol, "carol")


def _setter(event: asyncio.Event) -> Any:
    async def done() -> None:
        event.set()

    return done


async def test_retired_external_login_when_tried_with_its_old_password_is_refused(
    world: World,
) -> None:
    nc = Client()
    try:
        with pytest.raises(nats.errors.Error, match="Authorization"):
            await nc.connect(
                world.url.replace("nats://", "nats://external:anything@"),
                allow_reconnect=False,
                error_cb=_quiet,
            )
    finally:
        await nc.close()


async def _quiet(exc: Exception) -> None:
    pass
