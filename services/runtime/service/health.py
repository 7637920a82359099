"""Health the NATS way: each service answers the NATS services API as ``blendmesh-<role>``.

``register`` adds a nats.micro service to a service's connection: it answers
``$SRV.PING``, ``$SRV.INFO`` and ``$SRV.STATS`` (for every service, for its name, and for
its own instance id) with the blendmesh version, and its STATS reply carries ``data``
(``contracts.health.InstanceData``): what the service's ``stats`` callable says of it, read
when asked. Every instance of a role shares the name; each has its own id, so executors
that scale out answer one each. ``nats micro ls`` and ``nats micro stats`` show them too.

A responder may publish to whatever reply subject a request names (``allow_responses``),
so it answers only into an inbox: a request could otherwise aim its answer at the log or
at the JetStream API (docs/adr/0017-health-on-the-nats-services-api.md).

``ping`` and ``stats`` collect every instance's answer: nats-py's request returns the
first one only. ``snapshot`` folds the STATS replies of every role and JetStream's state
into ``contracts.health.MeshStatus``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from importlib.metadata import version
from typing import Any, Protocol, TypeVar

import msgspec
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from nats.js.api import ConsumerInfo
from nats.js.errors import NotFoundError
from nats.micro.service import Service, ServiceConfig, ServiceVerb, control_subject

from contracts import subjects
from contracts.health import (
    ROLES,
    ConsumerState,
    MeshStatus,
    PingReply,
    StatsReply,
    assess,
    unreachable,
)
from services.runtime.nats import delivered
from services.runtime.nats.jetstream_state import jetstream_state

log = logging.getLogger("blendmesh.health")

VERSION = version("blendmesh")
STATS_WITHIN = 0.5  # seconds a service takes at most to read its own state for STATS
ANSWERS_WITHIN = 1.0  # seconds a snapshot waits for every instance's STATS
STOP_WITHIN = 2.0  # seconds stopping waits for the server to take the subscriptions back
INBOXES = "_INBOX."  # every login's replies arrive under it (access.inbox_prefix)

Stats = Callable[[], Awaitable[dict[str, Any]]]
_R = TypeVar("_R", PingReply, StatsReply)


class Link(Protocol):
    """What registering needs of a connection: a ``Bus`` is one."""

    @property
    def nc(self) -> Client: ...

    @property
    def prefix(self) -> str: ...


def service_name(role: str) -> str:
    """The nats.micro service name every instance of ``role`` registers under."""
    return f"blendmesh-{role}"


def nats_down(nc: Client) -> str:
    """Why a connection that is not connected cannot ask anything."""
    state = "closed" if nc.is_closed else "reconnecting"
    return f"the connection to NATS is {state}: the NATS server is down or unreachable"


def _answerable(msg: Msg) -> bool:
    """A request a client published with an inbox to answer into; never a stream's
    delivery, never a reply subject elsewhere (the log, the JetStream API)."""
    if delivered.from_stream(msg.reply, msg.headers) or not msg.reply.startswith(INBOXES):
        delivered.log.warning(
            "health: ignored a request on %s whose reply %s is not an inbox",
            msg.subject[:200],
            (msg.reply or "")[:200],
        )
        return False
    return True


class _Answering(Service):
    """nats.micro's service, answering only into inboxes, with ``data`` in STATS.

    nats-py's own stats handler is synchronous and fills only endpoints' data, and a
    blendmesh service has no endpoints: its state is read here, when asked.
    """

    def __init__(self, nc: Client, config: ServiceConfig, stats: Stats | None) -> None:
        super().__init__(nc, config)
        self._read_stats = stats

    async def _handle_ping_request(self, msg: Msg) -> None:
        if _answerable(msg):
            await super()._handle_ping_request(msg)

    async def _handle_info_request(self, msg: Msg) -> None:
        if _answerable(msg):
            await super()._handle_info_request(msg)

    async def _handle_stats_request(self, msg: Msg) -> None:
        if not _answerable(msg):
            return
        reply = self.stats().to_dict()
        reply["data"] = await self._data()
        with contextlib.suppress(NatsError):
            await msg.respond(json.dumps(reply).encode())

    async def _data(self) -> dict[str, Any]:
        if self._read_stats is None:
            return {}
        try:
            return dict(await asyncio.wait_for(self._read_stats(), STATS_WITHIN))
        except TimeoutError:
            return {"problems": [f"it could not read its state within {STATS_WITHIN:g} s"]}
        except Exception as exc:  # noqa: BLE001 - reported in the reply, never fatal
            log.warning("%s: reading its state failed: %r", self._name, exc)
            return {"problems": [f"it could not read its state ({type(exc).__name__})"]}


class Registration:
    """A registered instance; ``stop()`` when the service stops."""

    def __init__(self, service: Service, nc: Client, role: str) -> None:
        self._service = service
        self._nc = nc
        self.role = role

    @property
    def id(self) -> str:
        return self._service.id

    async def stop(self) -> None:
        """Stop answering. Without a connection there is nothing to undo: nats.micro would
        drain each subscription, waiting on a server that is gone."""
        if not self._nc.is_connected:
            return
        with contextlib.suppress(Exception):  # the connection may go meanwhile
            await asyncio.wait_for(self._service.stop(), STOP_WITHIN)


async def register(link: Link, role: str, stats: Stats | None = None) -> Registration:
    """Answer the NATS services API as one instance of ``role``; ``stats`` is read for
    each ``$SRV.STATS`` request (within ``STATS_WITHIN`` seconds)."""
    config = ServiceConfig(
        name=service_name(role),
        version=VERSION,
        description=f"blendmesh {role}",
        metadata={"role": role, "prefix": link.prefix},
    )
    service = _Answering(link.nc, config, stats)
    await service.start()
    # Once the server holds the subscriptions a ping finds this instance: a status asked
    # right after a start must not call a service missing that is there.
    await link.nc.flush()
    return Registration(service, link.nc, role)


def consumer_state(info: ConsumerInfo) -> ConsumerState:
    floor = info.ack_floor
    last = floor.last_active if floor is not None else None
    return ConsumerState(
        durable=info.name,
        num_pending=info.num_pending or 0,
        num_ack_pending=info.num_ack_pending or 0,
        num_redelivered=info.num_redelivered or 0,
        ack_floor=floor.stream_seq if floor is not None else 0,
        last_ack=last.isoformat() if last is not None else None,
    )


def consumer_stats(
    js: JetStreamContext,
    prefix: str,
    durables: Sequence[str],
    own: Callable[[], list[str]] = list,
) -> Stats:
    """A ``stats`` callable: the state of the service's own durable consumers of the log
    (a role may read its own durables' info and no one else's: docs/adr/0007), and the
    problems its loops know of (``own``: ``ConsumerService.problems``)."""
    stream = subjects.stream_name(prefix)

    async def one(durable: str) -> ConsumerState | str:
        try:
            return consumer_state(await js.consumer_info(stream, durable, timeout=STATS_WITHIN))
        except NotFoundError:
            return f"its consumer {durable} does not exist (it is made again within seconds)"
        except (NatsError, TimeoutError) as exc:
            return f"its consumer {durable} could not be read ({type(exc).__name__})"

    async def read() -> dict[str, Any]:
        found = await asyncio.gather(*(one(d) for d in durables))
        return {
            "consumers": [msgspec.to_builtins(c) for c in found if isinstance(c, ConsumerState)],
            "problems": [p for p in found if isinstance(p, str)] + own(),
        }

    return read


async def _collect(nc: Client, asked: Sequence[str], wait: float) -> list[bytes]:
    """Every answer to ``asked`` that arrives within ``wait`` seconds, on one inbox."""
    inbox = nc.new_inbox()  # under the connection's inbox prefix: the role may listen there
    sub = await nc.subscribe(inbox)
    found: list[bytes] = []
    try:
        for subject in asked:
            await nc.publish(subject, b"", reply=inbox)
        loop = asyncio.get_running_loop()
        # Not a retry (services.runtime.nats.retry): every answer until the deadline counts.
        deadline = loop.time() + wait
        while (left := deadline - loop.time()) > 0:
            try:
                msg = await sub.next_msg(timeout=left)
            except TimeoutError:
                break
            found.append(msg.data)
    finally:
        with contextlib.suppress(NatsError):
            await sub.unsubscribe()
    return found


def _decoded(kind: type[_R], data: Sequence[bytes], prefix: str | None) -> list[_R]:
    out = []
    for raw in data:
        try:
            reply = msgspec.json.decode(raw, type=kind)
        except (msgspec.DecodeError, msgspec.ValidationError):
            log.info("health: ignored an answer that is not a nats.micro %s", kind.__name__)
            continue
        if prefix is None or reply.metadata.get("prefix") == prefix:
            out.append(reply)
    return out


async def ping(
    nc: Client, role: str, wait: float = 0.5, prefix: str | None = None
) -> list[PingReply]:
    """Every instance of ``role`` that answers ``$SRV.PING`` within ``wait`` seconds (of
    the mesh on ``prefix`` only, when given: meshes may share a server)."""
    subject = control_subject(ServiceVerb.PING, service_name(role))
    return _decoded(PingReply, await _collect(nc, [subject], wait), prefix)


async def stats(
    nc: Client, role: str, wait: float = 1.0, prefix: str | None = None
) -> list[StatsReply]:
    """Every instance of ``role``'s ``$SRV.STATS`` reply within ``wait`` seconds."""
    subject = control_subject(ServiceVerb.STATS, service_name(role))
    return _decoded(StatsReply, await _collect(nc, [subject], wait), prefix)


async def snapshot(
    nc: Client, js: JetStreamContext, prefix: str, wait: float = ANSWERS_WITHIN
) -> MeshStatus:
    """The mesh on ``prefix`` at a glance: every role's STATS replies that arrive within
    ``wait`` seconds, and JetStream's state."""
    if not nc.is_connected:
        return unreachable(nats_down(nc))
    asked = [control_subject(ServiceVerb.STATS, service_name(role)) for role in ROLES]
    try:
        answers, jetstream = await asyncio.gather(
            _collect(nc, asked, wait), jetstream_state(js, prefix, wait)
        )
    except NatsError as exc:  # the connection closed meanwhile
        return unreachable(f"NATS could not be asked ({type(exc).__name__}): is it up?")
    by_role: dict[str, list[StatsReply]] = {}
    for reply in _decoded(StatsReply, answers, prefix):
        by_role.setdefault(reply.metadata.get("role", ""), []).append(reply)
    return assess(by_role, jetstream, subjects.stream_name(prefix))
