"""The bus: connection, the immutable event-log stream, KV buckets and the publisher.

On a JetStream cluster every stream, bucket and object store is created with
``BLENDMESH_REPLICAS`` copies (see ``use_replicas``), and ``NATS_URL`` may list several
servers, comma separated: a client whose server dies moves to another.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import weakref
from typing import Any, Protocol
from urllib.parse import urlsplit

from nats.aio.client import Client
from nats.errors import Error as NatsError
from nats.errors import NoServersError
from nats.js import JetStreamContext, JetStreamManager
from nats.js.api import (
    ConsumerConfig,
    ConsumerInfo,
    DiscardPolicy,
    KeyValueConfig,
    ObjectStoreConfig,
    StorageType,
    StreamConfig,
    StreamInfo,
)
from nats.js.errors import (
    BadRequestError,
    BucketNotFoundError,
    NotFoundError,
    ServiceUnavailableError,
)
from nats.js.kv import KeyValue

from contracts import subjects
from contracts.events import Event
from services.runtime import access, tracing
from services.runtime.access import Login
from services.runtime.limits import encode_bounded
from services.runtime.ready import ON_A_CLUSTER, READY_WAIT, NotReady, elected, until_ready

log = logging.getLogger("blendmesh.bus")
# Security warnings show even where a command keeps its log quiet (the CLI logs errors only).
security_log = logging.getLogger("blendmesh.security")
security_log.setLevel(logging.WARNING)

DUPLICATE_WINDOW = 120.0  # seconds: covers a publisher's retries after a crash or reconnect


class LoginRefused(ConnectionError):
    """The server does not accept this client's user or password."""


class JetStreamUnavailable(ConnectionError):
    """The server is up but JetStream does not answer (a cluster without a meta leader)."""


class AnonymousRefused(LoginRefused):
    """BLENDMESH_REQUIRE_AUTH is set and there are no credentials to join NATS with."""


def servers(url: str) -> list[str]:
    """The servers of a NATS URL: one, or several separated by commas (a cluster's)."""
    return [u.strip() for u in url.split(",") if u.strip()]


def _url_user(url: str) -> str | None:
    """The user (or token) of a NATS URL, or of any URL in a comma-separated list."""
    users = [urlsplit(u.strip()).username for u in url.split(",")]
    return next((user for user in users if user), None)


def joins_anonymously(url: str, login: Login | None) -> bool:
    return login is None and _url_user(url) is None


def refuse_anonymous(url: str, login: Login | None, required: bool) -> None:
    """With ``required`` (BLENDMESH_REQUIRE_AUTH), refuse to join ``url`` without credentials."""
    if required and joins_anonymously(url, login):
        raise AnonymousRefused(
            f"BLENDMESH_REQUIRE_AUTH is set and there are no credentials for NATS at {url}; "
            "use the credentials file of the mesh that runs it (BLENDMESH_NATS_CREDENTIALS, "
            "or the same --home), or put user:password in NATS_URL"
        )


_WARNED: set[str] = set()


def _warn_anonymous(url: str) -> None:
    if url in _WARNED:
        return
    _WARNED.add(url)
    security_log.warning(
        "joined NATS at %s without credentials: unless that server restricts anonymous "
        "clients itself, anyone who reaches it can append approvals and operations to the "
        "event log, create streams that republish into it, delete or rewrite the log, write "
        "the KV buckets (allowlist, journal, leases) and object stores, and delete or replace "
        "the services' consumers; set BLENDMESH_REQUIRE_AUTH=1 to refuse to join without "
        "credentials",
        url,
    )


def _ephemeral(config: ConsumerConfig) -> ConsumerConfig:
    """Give a consumer without a name one, so that its create request names it.

    The create subject without a consumer name lets the request body pick any consumer,
    a service's durable included; access.py refuses that subject to every role but admin.
    """
    if config.name or config.durable_name:
        return config
    return config.evolve(name=f"eph_{secrets.token_hex(8)}")


class _NamingManager(JetStreamManager):
    async def add_consumer(
        self,
        stream: str,
        config: ConsumerConfig | None = None,
        timeout: float | None = None,
        **params: Any,
    ) -> ConsumerInfo:
        named = _ephemeral((config or ConsumerConfig()).evolve(**params))
        return await super().add_consumer(stream, named, timeout)


class NamingJetStream(JetStreamContext):
    """A JetStream context whose consumers, ephemeral and ordered ones too, all have names."""

    @property
    def _jsm(self) -> JetStreamManager:  # nats-py creates ordered consumers through this
        return _NamingManager(conn=self._nc, prefix=self._prefix, timeout=self._timeout)

    async def add_consumer(
        self,
        stream: str,
        config: ConsumerConfig | None = None,
        timeout: float | None = None,
        **params: Any,
    ) -> ConsumerInfo:
        return await self._jsm.add_consumer(stream, config, timeout, **params)


class Connection(Client):
    """A NATS client whose JetStream contexts name every consumer they create."""

    def jetstream(self, **opts: Any) -> JetStreamContext:
        return NamingJetStream(self, **opts)


PROBE_TIMEOUT = 2  # seconds one connection attempt waits for the server's hello (whole: nats-py)
RETRY_PAUSE = 0.5  # seconds between attempts while a server does not listen yet


async def connect(url: str, name: str, login: Login | None = None, wait: float = 30.0) -> Client:
    """Connect with reconnects forever, so a restarted server is rejoined, not fatal.

    The first connection is retried for ``wait`` seconds too: under a Procfile the
    services may start before nats-server listens. A refused login is not retried.
    ``url`` may list a cluster's servers, comma separated: any of them will do, and the
    client moves to another when its server goes away.
    """

    async def _error(exc: Exception) -> None:
        log.warning("%s: nats error: %s", name, exc)

    async def _quiet(exc: Exception) -> None:
        pass  # the probe's failure is raised below, with what to do about it

    identity: dict[str, Any] = {"user": login.user, "password": login.password} if login else {}
    role = login.user if login else _url_user(url)
    if role in access.ROLES:  # replies and deliveries arrive where only the role may listen
        identity["inbox_prefix"] = access.inbox_prefix(role)
    pool = servers(url)
    deadline = asyncio.get_running_loop().time() + wait
    while True:
        try:
            # One attempt without reconnects first: with them, nats-py retries a refused
            # login forever instead of reporting it. Its first connect tries each server
            # max_reconnect_attempts times (60, 2 s apart, by default) even so: twice is
            # enough here, where this loop waits and tries again until ``wait``.
            probe = Client()
            try:
                await probe.connect(
                    pool,
                    name=name,
                    allow_reconnect=False,
                    max_reconnect_attempts=1,
                    reconnect_time_wait=0,
                    # A socket that accepts and says nothing, or an address that drops
                    # packets, is given up within the wait, not nats-py's own 2 s.
                    connect_timeout=max(1, min(PROBE_TIMEOUT, int(wait))),
                    error_cb=_quiet,
                    **identity,
                )
            finally:
                await probe.close()  # a refused probe's socket too
            nc = Connection()
            options: dict[str, Any] = {"max_reconnect_attempts": -1, "reconnect_time_wait": 0.25}
            await nc.connect(pool, name=name, error_cb=_error, **options, **identity)
            if joins_anonymously(url, login):
                _warn_anonymous(url)
            return nc
        except (OSError, NoServersError) as exc:
            # No attempt starts after the deadline: the next would, after its pause.
            if asyncio.get_running_loop().time() + RETRY_PAUSE > deadline:
                said = "no answer" if isinstance(exc, TimeoutError) else str(exc)
                raise ConnectionError(
                    f"cannot reach NATS at {url} ({said or type(exc).__name__}); start it "
                    "with `blendmesh up` or fix NATS_URL"
                ) from None
            await asyncio.sleep(RETRY_PAUSE)
        except NatsError as exc:
            if "authorization" not in str(exc).lower():
                raise
            who = f"user {login.user!r}" if login else "an anonymous client"
            raise LoginRefused(
                f"NATS at {url} refused {who} ({name}); use the credentials file of the "
                "mesh that runs it (BLENDMESH_NATS_CREDENTIALS, or the same --home), or put "
                "user:password in NATS_URL"
            ) from None


async def wait_for_jetstream(js: JetStreamContext, wait: float = READY_WAIT) -> None:
    """Return once JetStream answers. A fresh cluster answers nothing until a majority of
    its servers have met and elected a meta leader (several seconds); streams created
    before then would time out."""

    async def answers() -> None:
        try:
            await js.account_info()
        except ServiceUnavailableError as exc:
            if exc.err_code is None:  # no one answers at all: a server without JetStream
                raise JetStreamUnavailable(
                    "the NATS server has no JetStream; blendmesh needs nats-server -js"
                ) from None
            raise

    try:
        await until_ready("JetStream", answers, wait)
    except NotReady as exc:
        raise JetStreamUnavailable(str(exc)) from None


# The copies of each stream a context creates (BLENDMESH_REPLICAS), kept per connection
# like the bucket handles below, so adapters that create a bucket on first use need not
# be told.
_REPLICAS: weakref.WeakKeyDictionary[JetStreamContext, int] = weakref.WeakKeyDictionary()


def use_replicas(js: JetStreamContext, replicas: int) -> None:
    """Create every stream, KV bucket and object store through ``js`` with ``replicas``
    copies: 1 on one server, 3 (or 5) on a cluster, where a stream then outlives the loss
    of one (or two) of its servers."""
    _REPLICAS[js] = replicas


def replicas_of(js: JetStreamContext) -> int:
    return _REPLICAS.get(js, 1)


def event_log_config(prefix: str, replicas: int = 1) -> StreamConfig:
    """The event log: file storage, nothing can be deleted or purged, duplicates dropped."""
    return log_config(subjects.stream_name(prefix), subjects.stream_subjects(prefix), replicas)


def log_config(name: str, subject_filters: list[str], replicas: int = 1) -> StreamConfig:
    """A log stream: file storage, nothing can be deleted or purged, duplicates dropped."""
    return StreamConfig(
        name=name,
        subjects=subject_filters,
        storage=StorageType.FILE,
        deny_delete=True,
        deny_purge=True,
        duplicate_window=DUPLICATE_WINDOW,
        discard=DiscardPolicy.OLD,
        allow_direct=True,
        num_replicas=replicas,
    )


async def ensure_stream(js: JetStreamContext, config: StreamConfig, wait: float) -> StreamInfo:
    """Find the stream ``config`` names, or create it, once it has a leader; waits
    (``until_ready``) while JetStream is not ready, and while this user may not create
    it: on a server blendmesh started only the admin may, and the process that started
    it is about to."""
    name = config.name or ""

    async def find_or_create() -> StreamInfo:
        try:
            info = await js.stream_info(name)
        except NotFoundError:
            try:
                info = await js.add_stream(config)
            except BadRequestError:  # created meanwhile by another process
                info = await js.stream_info(name)
        return elected(info)

    return await until_ready(
        f"stream {name}",
        find_or_create,
        wait,
        f"{ON_A_CLUSTER}; on a server blendmesh started, start the mesh (`blendmesh up`, or "
        "the Procfile's nats line) first: only its admin may create the stream",
    )


async def ensure_event_log(js: JetStreamContext, prefix: str, wait: float = READY_WAIT) -> None:
    """Create the event-log stream, or check that the existing one is still immutable.

    Only admin may create or widen it on a server blendmesh started: the other roles find
    it made, and never send the request they would be refused.
    """
    await ensure_log(js, event_log_config(prefix, replicas_of(js)), wait)


async def ensure_log(js: JetStreamContext, config: StreamConfig, wait: float) -> None:
    """Create a log stream (``log_config``), or check that the existing one is still
    immutable, keeps the copies asked for, and logs every subject ``config`` names."""
    name = config.name or ""
    info = await ensure_stream(js, config, wait)
    if not (info.config.deny_delete and info.config.deny_purge):
        raise RuntimeError(
            f"stream {name} exists but allows delete or purge; "
            "blendmesh needs an immutable log: recreate it or use another BLENDMESH_PREFIX"
        )
    copies = info.config.num_replicas or 1
    if copies < replicas_of(js):
        log.warning(
            "stream %s keeps %d copies, fewer than the %d of BLENDMESH_REPLICAS; the admin "
            "user can add them (nats stream edit %s --replicas %d)",
            name,
            copies,
            config.num_replicas,
            name,
            config.num_replicas,
        )
    if sorted(info.config.subjects or []) != sorted(config.subjects or []):
        # A newer blendmesh logs more subjects; widening a stream keeps its messages.
        await js.update_stream(config.evolve(num_replicas=copies))


# Binding a bucket costs a round trip; adapters call ensure_kv on every access, so the
# handles are kept per connection (they stay valid across reconnects).
_BUCKETS: weakref.WeakKeyDictionary[JetStreamContext, dict[str, KeyValue]] = (
    weakref.WeakKeyDictionary()
)


async def ensure_kv(js: JetStreamContext, prefix: str, name: str, history: int = 1) -> KeyValue:
    """The bucket ``<prefix>_<name>``, created with file storage on first use (on a server
    blendmesh started, the admin has created it: see ``stores.ensure_stores``)."""
    bucket = access.bucket(prefix, name)
    bound = _BUCKETS.setdefault(js, {})
    if bucket not in bound:
        try:
            bound[bucket] = await js.key_value(bucket)
        except BucketNotFoundError:
            bound[bucket] = await js.create_key_value(kv_config(js, bucket, history))
    return bound[bucket]


def kv_config(js: JetStreamContext, bucket: str, history: int = 1) -> KeyValueConfig:
    """How a KV bucket is created through ``js``: on file, with its replicas."""
    # Direct gets: a key is read by the stream's own responder, not through the
    # JetStream API's queue; every run reads several keys (head, lease, journal).
    return KeyValueConfig(
        bucket=bucket,
        history=history,
        storage=StorageType.FILE,
        replicas=replicas_of(js),
        direct=True,
    )


def object_store_config(js: JetStreamContext, ttl: float | None = None) -> ObjectStoreConfig:
    """How an object store is created through ``js``: on file, with its replicas, its
    objects kept for ``ttl`` seconds (None: for ever)."""
    return ObjectStoreConfig(storage=StorageType.FILE, replicas=replicas_of(js), ttl=ttl)


class EventPublisher(Protocol):
    """Port: append events to the log. Returns the stream sequence of the event."""

    async def publish(self, event: Event) -> int: ...


class PipelinedPublisher(Protocol):
    """Port: send events in order without waiting for each acknowledgement."""

    async def send(self, event: Event) -> None: ...

    async def settle(self) -> None:
        """Wait until every sent event is stored; raise if any was not."""
        ...


class JetStreamPublisher:
    """Publishes with ``Nats-Msg-Id`` = the event id, so re-publishing is idempotent.

    The headers also carry the current trace context, so the consumers' spans join it.
    """

    def __init__(self, js: JetStreamContext, prefix: str) -> None:
        self._js = js
        self._prefix = prefix
        self._stream = subjects.stream_name(prefix)

    async def publish(self, event: Event) -> int:
        ack = await self._js.publish(
            subjects.for_event(self._prefix, event),
            encode_bounded(event),  # raises EventTooLarge before NATS would
            stream=self._stream,
            headers=tracing.inject({"Nats-Msg-Id": event.event_id}),
        )
        return ack.seq


class JetStreamPipeline:
    """Publishes in order and collects the acknowledgements to await together.

    JetStream with ``sync_interval: always`` fsyncs every message; waiting for each ack in
    turn would put one fsync on the path of every operation of a run.
    """

    def __init__(self, js: JetStreamContext, prefix: str) -> None:
        self._js = js
        self._prefix = prefix
        self._stream = subjects.stream_name(prefix)
        self._pending: list[asyncio.Future[Any]] = []

    async def send(self, event: Event) -> None:
        self._pending.append(
            await self._js.publish_async(
                subjects.for_event(self._prefix, event),
                encode_bounded(event),
                stream=self._stream,
                headers=tracing.inject({"Nats-Msg-Id": event.event_id}),
            )
        )

    async def settle(self, timeout: float = 15.0) -> None:
        """Wait for every acknowledgement; an ack lost to a reconnect raises after ``timeout``
        (the handler then fails and its message is delivered again) instead of hanging."""
        pending, self._pending = self._pending, []
        if not pending:
            return
        try:
            await asyncio.wait_for(asyncio.gather(*pending), timeout)
        except TimeoutError:
            for future in pending:
                future.cancel()
            raise TimeoutError(
                f"{sum(not f.done() or f.cancelled() for f in pending)} event(s) were not "
                f"acknowledged within {timeout:g} s"
            ) from None
