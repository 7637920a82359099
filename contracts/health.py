"""The mesh's health: what each service says of itself, and the snapshot that judges it.

Every service answers the NATS services API (``$SRV.PING``, ``$SRV.INFO``, ``$SRV.STATS``)
as ``blendmesh-<role>`` (``services/runtime/service/health.py``). Its STATS reply carries
``data``: an ``InstanceData``, the state of its durable consumers and, for an executor,
of its Blender. ``assess`` folds those replies and JetStream's own state into one
``MeshStatus``; ``blendmesh status`` prints it and the gateway's ``/readyz`` serves it, so
both judge readiness by this one rule.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated

import msgspec

from contracts.limits import MAX_BRIDGES

# The services a run passes through, in the order it does; without one of them a run
# waits for ever. The doors (the bus door, the gateway) are shown but not needed.
RUN_NEEDS = ("planner", "policy", "executor", "guardians", "audit")
ROLES = (*RUN_NEEDS, "door", "gateway")
MAX_WAITING = 20  # runs an executor lists as handed back to executors of another catalog


class _Data(msgspec.Struct, frozen=True, kw_only=True):
    # Unknown fields are ignored on purpose: a newer service's reply still reads.
    pass


class ConsumerState(_Data, frozen=True, kw_only=True):
    """A durable consumer of the log as the server counts it."""

    durable: str
    num_pending: int = 0  # in the log, not yet delivered to it
    num_ack_pending: int = 0  # delivered, not yet acknowledged
    num_redelivered: int = 0  # delivered more than once and still unacknowledged
    ack_floor: int = 0  # the stream sequence up to which everything is acknowledged
    last_ack: str | None = None  # when the ack floor last moved (ISO 8601, UTC)


class BlenderState(_Data, frozen=True, kw_only=True):
    """An executor's Blender bridge, and the scene it holds loaded between runs."""

    up: bool
    # Stopped on purpose after BLENDMESH_BRIDGE_IDLE seconds unused (``up`` is false); the
    # next run starts it again: healthy, not down.
    idle: bool = False
    version: str = ""
    restarts: int = 0
    scene: str | None = None
    revision: int | None = None


class InstanceData(_Data, frozen=True, kw_only=True):
    """What a service adds to its ``$SRV.STATS`` reply (``data``)."""

    consumers: list[ConsumerState] = []
    blender: BlenderState | None = None  # an executor's first bridge
    # Every bridge of an executor's pool (ADR 0070), the first included.
    bridges: Annotated[list[BlenderState], msgspec.Meta(max_length=MAX_BRIDGES)] = []
    # What the instance knows is wrong with itself (a consumer it cannot read).
    problems: list[str] = []
    # An executor's: the tool catalog it serves, and the runs pinned to another that it
    # handed back lately, each said in words (ADR 0053). Not problems: it is healthy.
    catalog_version: str | None = None
    waiting: Annotated[list[str], msgspec.Meta(max_length=MAX_WAITING)] = []


class PingReply(_Data, frozen=True, kw_only=True):
    """``io.nats.micro.v1.ping_response``, as far as blendmesh reads it."""

    name: str
    id: str
    version: str
    metadata: dict[str, str] = {}


class StatsReply(_Data, frozen=True, kw_only=True):
    """``io.nats.micro.v1.stats_response``, as far as blendmesh reads it."""

    name: str
    id: str
    version: str
    started: str = ""
    metadata: dict[str, str] = {}
    data: InstanceData = msgspec.field(default_factory=InstanceData)


# -- the snapshot ------------------------------------------------------------------------


class Instance(_Data, frozen=True, kw_only=True):
    id: str
    version: str
    started: str
    healthy: bool
    problems: list[str] = []
    consumers: list[ConsumerState] = []
    blender: BlenderState | None = None
    bridges: list[BlenderState] = []
    catalog_version: str | None = None
    waiting: list[str] = []


class ServiceStatus(_Data, frozen=True, kw_only=True):
    role: str
    needed: bool  # a run cannot finish without it
    healthy: bool  # at least one instance is
    instances: list[Instance] = []
    problem: str | None = None  # why it is not healthy, and what to start


class StreamStatus(_Data, frozen=True, kw_only=True):
    name: str
    replicas: int | None  # None: the stream did not say
    leader: str | None
    messages: int = 0
    bytes: int = 0
    problems: list[str] = []  # replicas offline or behind


class JetStreamStatus(_Data, frozen=True, kw_only=True):
    ok: bool  # JetStream answered
    error: str | None = None
    storage: int = 0  # bytes the account stores
    storage_limit: int | None = None  # the account's limit; None: the account has none
    storage_left: int | None = None
    streams: list[StreamStatus] = []  # the mesh's own streams


class MeshStatus(_Data, frozen=True, kw_only=True):
    ready: bool  # every service a run needs answers, and JetStream does
    reasons: list[str] = []  # why not, each with what to do
    services: list[ServiceStatus] = []
    jetstream: JetStreamStatus


def start_hint(role: str) -> str:
    return (
        f"start one (`python -m services.{role}`, the Procfile's {role} line), "
        "or the whole mesh with `blendmesh up`"
    )


def instance_of(role: str, reply: StatsReply) -> Instance:
    """One instance as its STATS reply describes it, judged healthy or not."""
    problems = list(reply.data.problems)
    blender = reply.data.blender
    if role == "executor":
        if blender is None:
            problems.append("it does not say whether its Blender runs")
        elif not blender.up and not blender.idle:
            problems.append("its Blender is not running (it starts it again for the next run)")
        for index, spare in enumerate(reply.data.bridges[1:], start=2):
            if not spare.up and not spare.idle:
                problems.append(
                    f"its Blender {index} of {len(reply.data.bridges)} is not running "
                    "(it starts it again for the next run)"
                )
    return Instance(
        id=reply.id,
        version=reply.version,
        started=reply.started,
        healthy=not problems,
        problems=problems,
        consumers=list(reply.data.consumers),
        blender=blender,
        bridges=list(reply.data.bridges),
        catalog_version=reply.data.catalog_version,
        waiting=list(reply.data.waiting),
    )


def service_status(role: str, replies: Sequence[StatsReply]) -> ServiceStatus:
    instances = sorted((instance_of(role, r) for r in replies), key=lambda i: i.id)
    healthy = any(i.healthy for i in instances)
    problem = None
    if not instances:
        problem = f"no {role} answers: {start_hint(role)}"
    elif not healthy:
        problem = f"no {role} is healthy: {instances[0].problems[0]}"
    needed = role in RUN_NEEDS
    return ServiceStatus(
        role=role, needed=needed, healthy=healthy, instances=instances, problem=problem
    )


def jetstream_problems(jetstream: JetStreamStatus, event_log: str) -> list[str]:
    """What in JetStream's state stops a run: JetStream silent, the log missing or
    without a leader."""
    if not jetstream.ok:
        return [jetstream.error or "JetStream does not answer"]
    problems = []
    names = {s.name: s for s in jetstream.streams}
    if event_log not in names:
        problems.append(
            f"the event log {event_log} does not exist: start the mesh (`blendmesh up`, or "
            "the Procfile's nats line)"
        )
    for stream in jetstream.streams:
        if stream.leader is None:
            why = "; ".join(stream.problems) or "none is elected"
            problems.append(
                f"stream {stream.name} has no leader ({why}): start a majority of the "
                "cluster's servers"
            )
    if jetstream.storage_left is not None and jetstream.storage_left <= 0:
        problems.append("the account's JetStream storage is full: raise its limit")
    return problems


def assess(
    replies: Mapping[str, Sequence[StatsReply]], jetstream: JetStreamStatus, event_log: str
) -> MeshStatus:
    """The mesh at a glance: each role's instances (``replies`` by role) and JetStream's
    state, and whether a run can go through now."""
    services = [service_status(role, replies.get(role, ())) for role in ROLES]
    reasons = jetstream_problems(jetstream, event_log)
    reasons += [s.problem for s in services if s.needed and s.problem]
    return MeshStatus(ready=not reasons, reasons=reasons, services=services, jetstream=jetstream)


def unreachable(reason: str) -> MeshStatus:
    """The snapshot of a mesh whose NATS cannot be reached: nothing answers."""
    return assess({}, JetStreamStatus(ok=False, error=reason), "")
