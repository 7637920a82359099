"""``GET /healthz`` and ``GET /readyz``, and the gateway's own answer to the services API.

Both routes need no token: a load balancer or a supervisor asks them. ``/healthz`` says
whether the gateway's process and its NATS connection live; ``/readyz`` answers 200 when a
run can go through and 503 with the reasons otherwise. Its details (each service's
instances with their ids, versions, consumers and Blender restarts, and the streams'
sizes: the snapshot ``blendmesh status`` prints, ``contracts.health``) are for the
operator: shown where ``BLENDMESH_METRICS_TOKEN`` is set only to a request that sends it,
as ``/metrics`` is. The snapshot is kept a second, so a probe asked often costs the mesh
one question a second, and which scene an executor holds is never shown.

The gateway logs in as ``client``, which may ask the services API but not answer it; it
answers as ``blendmesh-gateway`` on a second login, ``gateway``, that may publish
nothing else (docs/adr/0017-health-on-the-nats-services-api.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from fastapi import APIRouter, Request, Response
from nats.aio.client import Client
from nats.js import JetStreamContext
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from contracts.health import ConsumerState, Instance, MeshStatus, ServiceStatus, StreamStatus
from services.doors.gateway.context import Gateway, gateway
from services.doors.gateway.errors import responses
from services.runtime.nats.access import GATEWAY, login_for
from services.runtime.nats.bus import connect
from services.runtime.service import health
from services.runtime.service.host import Bus
from services.runtime.service.metrics_server import authorized

FRESH_FOR = 1.0  # seconds a snapshot is served again before the mesh is asked anew
ASK_WAIT = 1.0  # seconds the snapshot waits for the services' answers
Ask = Callable[[Client, JetStreamContext, str, float], Awaitable[MeshStatus]]


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class Liveness(_Model):
    live: bool = Field(description="The gateway's NATS connection is up")
    nats: Literal["connected", "reconnecting", "closed"]
    reason: str | None = Field(None, description="Why it is not live")


class ConsumerOut(_Model):
    durable: str
    num_pending: int = Field(description="In the log, not yet delivered to it")
    num_ack_pending: int = Field(description="Delivered, not yet acknowledged")
    num_redelivered: int
    ack_floor: int = Field(description="Stream sequence up to which all is acknowledged")
    last_ack: str | None = Field(description="When the ack floor last moved (ISO 8601)")


class BlenderOut(_Model):
    up: bool
    version: str
    restarts: int


class InstanceOut(_Model):
    id: str
    version: str
    started: str
    healthy: bool
    problems: list[str]
    consumers: list[ConsumerOut]
    blender: BlenderOut | None = Field(description="An executor's Blender; null for others")


class ServiceOut(_Model):
    role: str
    needed: bool = Field(description="A run cannot finish without it")
    healthy: bool
    instances: list[InstanceOut]
    problem: str | None


class StreamOut(_Model):
    name: str
    replicas: int | None
    leader: str | None
    messages: int
    bytes: int
    problems: list[str]


class JetStreamOut(_Model):
    ok: bool
    error: str | None
    storage: int = Field(description="Bytes the account stores")
    storage_limit: int | None = Field(description="The account's limit; null: none")
    storage_left: int | None
    streams: list[StreamOut]


class Readiness(_Model):
    ready: bool
    reasons: list[str] = Field(description="Why not ready, each with what to do")
    services: list[ServiceOut] | None = Field(
        None, description="With the metrics token (or where none is set) only"
    )
    jetstream: JetStreamOut | None = Field(
        None, description="With the metrics token (or where none is set) only"
    )


def _consumer_out(c: ConsumerState) -> ConsumerOut:
    return ConsumerOut(
        durable=c.durable,
        num_pending=c.num_pending,
        num_ack_pending=c.num_ack_pending,
        num_redelivered=c.num_redelivered,
        ack_floor=c.ack_floor,
        last_ack=c.last_ack,
    )


def _instance_out(i: Instance) -> InstanceOut:
    blender = i.blender
    return InstanceOut(
        id=i.id,
        version=i.version,
        started=i.started,
        healthy=i.healthy,
        problems=i.problems,
        consumers=[_consumer_out(c) for c in i.consumers],
        # Which scene it holds is its owner's business: not for an unauthenticated reader.
        blender=None
        if blender is None
        else BlenderOut(up=blender.up, version=blender.version, restarts=blender.restarts),
    )


def _service_out(s: ServiceStatus) -> ServiceOut:
    return ServiceOut(
        role=s.role,
        needed=s.needed,
        healthy=s.healthy,
        instances=[_instance_out(i) for i in s.instances],
        problem=s.problem,
    )


def _stream_out(s: StreamStatus) -> StreamOut:
    return StreamOut(
        name=s.name,
        replicas=s.replicas,
        leader=s.leader,
        messages=s.messages,
        bytes=s.bytes,
        problems=s.problems,
    )


def readiness_out(status: MeshStatus) -> Readiness:
    js = status.jetstream
    return Readiness(
        ready=status.ready,
        reasons=status.reasons,
        services=[_service_out(s) for s in status.services],
        jetstream=JetStreamOut(
            ok=js.ok,
            error=js.error,
            storage=js.storage,
            storage_limit=js.storage_limit,
            storage_left=js.storage_left,
            streams=[_stream_out(s) for s in js.streams],
        ),
    )


class ReadinessProbe:
    """The snapshot, asked at most once per ``fresh_for`` seconds however often it is
    read; readers that arrive while it is asked wait for that answer."""

    def __init__(
        self,
        bus: Bus,
        fresh_for: float = FRESH_FOR,
        wait: float = ASK_WAIT,
        ask: Ask = health.snapshot,
    ) -> None:
        self._bus = bus
        self._fresh_for = fresh_for
        self._wait = wait
        self._ask = ask
        self._lock = asyncio.Lock()
        self._last: tuple[float, MeshStatus] | None = None

    async def current(self) -> MeshStatus:
        async with self._lock:
            now = asyncio.get_running_loop().time()
            if self._last is not None and now - self._last[0] < self._fresh_for:
                return self._last[1]
            bus = self._bus
            status = await self._ask(bus.nc, bus.js, bus.prefix, self._wait)
            self._last = (asyncio.get_running_loop().time(), status)
            return status


def _nats_state(nc: Client) -> Literal["connected", "reconnecting", "closed"]:
    if nc.is_connected:
        return "connected"
    return "closed" if nc.is_closed else "reconnecting"


router = APIRouter(tags=["health"])


@router.get(
    "/healthz",
    response_model=Liveness,
    responses={
        503: {"model": Liveness, "description": "The gateway's NATS connection is down"},
        **responses(422),
    },
)
async def healthz(request: Request, response: Response) -> Liveness:
    """Liveness: 200 while the gateway and its NATS connection live; no token needed."""
    nc = gateway(request).bus.nc
    state = _nats_state(nc)
    if state == "connected":
        return Liveness(live=True, nats=state, reason=None)
    response.status_code = 503
    return Liveness(live=False, nats=state, reason=health.nats_down(nc))


@router.get(
    "/readyz",
    response_model=Readiness,
    responses={
        503: {"model": Readiness, "description": "A service a run needs, or JetStream, is missing"},
        **responses(422),
    },
)
async def readyz(request: Request, response: Response) -> Readiness:
    """Readiness: 200 when every service a run needs answers and JetStream does, 503 with
    the reasons otherwise. No token needed; the details of `blendmesh status` come with
    the metrics token, where one is set."""
    probe: ReadinessProbe = request.app.state.readiness
    status = await probe.current()
    if not status.ready:
        response.status_code = 503
    token = gateway(request).settings.metrics_token
    if authorized(request.headers.get("authorization"), token):
        return readiness_out(status)
    return Readiness(ready=status.ready, reasons=status.reasons, services=None, jetstream=None)


class Announcement:
    """The gateway's answer to the services API, on its own login; ``stop()`` ends both."""

    def __init__(self, nc: Client, registration: health.Registration) -> None:
        self._nc = nc
        self.registration = registration

    async def stop(self) -> None:
        await self.registration.stop()
        await self._nc.close()


async def announce(gw: Gateway, wait: float = 10.0) -> Announcement:
    """Answer ``$SRV.*`` as ``blendmesh-gateway``, saying whether its own NATS connection
    (the one every route uses) is up."""
    url = gw.settings.nats_url or ",".join(u.geturl() for u in gw.bus.nc.servers)
    login = login_for(gw.settings.credentials_path, GATEWAY)
    nc = await connect(url, "blendmesh-gateway-health", login, wait=wait)

    async def stats() -> dict[str, Any]:
        used = gw.bus.nc
        return {} if used.is_connected else {"problems": [health.nats_down(used)]}

    try:
        registration = await health.register(_Link(nc, gw.prefix), GATEWAY, stats)
    except BaseException:
        await nc.close()
        raise
    return Announcement(nc, registration)


class _Link:
    def __init__(self, nc: Client, prefix: str) -> None:
        self.nc = nc
        self.prefix = prefix
