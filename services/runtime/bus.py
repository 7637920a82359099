"""The bus: connection, the immutable event-log stream, KV buckets and the publisher."""

from __future__ import annotations

import asyncio
import logging
import weakref
from typing import Any, Protocol

import nats
from nats.aio.client import Client
from nats.errors import Error as NatsError
from nats.errors import NoServersError
from nats.js import JetStreamContext
from nats.js.api import DiscardPolicy, KeyValueConfig, StorageType, StreamConfig
from nats.js.errors import BadRequestError, BucketNotFoundError
from nats.js.kv import KeyValue

from contracts import subjects
from contracts.events import Event, encode_event
from services.runtime import tracing
from services.runtime.access import Login

log = logging.getLogger("blendmesh.bus")

DUPLICATE_WINDOW = 120.0  # seconds: covers a publisher's retries after a crash or reconnect


class LoginRefused(ConnectionError):
    """The server does not accept this client's user or password."""


async def connect(url: str, name: str, login: Login | None = None, wait: float = 30.0) -> Client:
    """Connect with reconnects forever, so a restarted server is rejoined, not fatal.

    The first connection is retried for ``wait`` seconds too: under a Procfile the
    services may start before nats-server listens. A refused login is not retried.
    """

    async def _error(exc: Exception) -> None:
        log.warning("%s: nats error: %s", name, exc)

    async def _quiet(exc: Exception) -> None:
        pass  # the probe's failure is raised below, with what to do about it

    auth: dict[str, Any] = {"user": login.user, "password": login.password} if login else {}
    deadline = asyncio.get_running_loop().time() + wait
    while True:
        try:
            # One attempt without reconnects first: with them, nats-py retries a refused
            # login forever instead of reporting it.
            probe = Client()
            try:
                await probe.connect(url, name=name, allow_reconnect=False, error_cb=_quiet, **auth)
            finally:
                await probe.close()  # a refused probe's socket too
            return await nats.connect(
                url,
                name=name,
                max_reconnect_attempts=-1,
                reconnect_time_wait=0.25,
                error_cb=_error,
                **auth,
            )
        except (OSError, NoServersError) as exc:
            if asyncio.get_running_loop().time() > deadline:
                raise ConnectionError(
                    f"cannot reach NATS at {url} ({exc}); start it with `blendmesh up` "
                    "or fix NATS_URL"
                ) from None
            await asyncio.sleep(0.5)
        except NatsError as exc:
            if "authorization" not in str(exc).lower():
                raise
            who = f"user {login.user!r}" if login else "an anonymous client"
            raise LoginRefused(
                f"NATS at {url} refused {who} ({name}); use the credentials file of the "
                "mesh that runs it (BLENDMESH_NATS_CREDENTIALS, or the same --home), or put "
                "user:password in NATS_URL"
            ) from None


def event_log_config(prefix: str) -> StreamConfig:
    """The event log: file storage, nothing can be deleted or purged, duplicates dropped."""
    return StreamConfig(
        name=subjects.stream_name(prefix),
        subjects=subjects.stream_subjects(prefix),
        storage=StorageType.FILE,
        deny_delete=True,
        deny_purge=True,
        duplicate_window=DUPLICATE_WINDOW,
        discard=DiscardPolicy.OLD,
        allow_direct=True,
    )


async def ensure_event_log(js: JetStreamContext, prefix: str) -> None:
    """Create the event-log stream, or check that the existing one is still immutable."""
    config = event_log_config(prefix)
    name = subjects.stream_name(prefix)
    try:
        await js.add_stream(config)
    except BadRequestError:
        info = await js.stream_info(name)
        if not (info.config.deny_delete and info.config.deny_purge):
            raise RuntimeError(
                f"stream {name} exists but allows delete or purge; "
                "blendmesh needs an immutable log: recreate it or use another BLENDMESH_PREFIX"
            ) from None
        if sorted(info.config.subjects or []) != sorted(config.subjects or []):
            # A newer blendmesh logs more subjects; widening a stream keeps its messages.
            await js.update_stream(config)


# Binding a bucket costs a round trip; adapters call ensure_kv on every access, so the
# handles are kept per connection (they stay valid across reconnects).
_BUCKETS: weakref.WeakKeyDictionary[JetStreamContext, dict[str, KeyValue]] = (
    weakref.WeakKeyDictionary()
)


async def ensure_kv(js: JetStreamContext, prefix: str, name: str, history: int = 1) -> KeyValue:
    """The bucket ``<prefix>_<name>``, created with file storage on first use."""
    bucket = f"{prefix}_{name}".replace(".", "_")
    bound = _BUCKETS.setdefault(js, {})
    if bucket not in bound:
        try:
            bound[bucket] = await js.key_value(bucket)
        except BucketNotFoundError:
            bound[bucket] = await js.create_key_value(
                KeyValueConfig(bucket=bucket, history=history, storage=StorageType.FILE)
            )
    return bound[bucket]


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
            encode_event(event),
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
                encode_event(event),
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
