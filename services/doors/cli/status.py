"""``blendmesh status``: the mesh at a glance, and whether a run can go through now.

It joins the mesh on NATS_URL, or the one ``blendmesh up`` runs on ``--home``, and never
starts one: a status of a mesh started for the question would say nothing. Each service
answers the NATS services API (``services/runtime/service/health.py``); JetStream says its own
state. Exit 0 when ready, 3 when a service a run needs is missing or unhealthy, or NATS or
JetStream does not answer.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import msgspec
from rich.console import Console

from contracts.health import Instance, MeshStatus, ServiceStatus, unreachable
from services.doors.cli import console as show
from services.runtime.nats.access import CLIENT, login_for
from services.runtime.nats.bus import connect
from services.runtime.nats.login import LoginRefused, refuse_anonymous
from services.runtime.service import health
from services.runtime.service.settings import Settings

EXIT_READY, EXIT_NOT_READY = 0, 3
MESH_INFO = "mesh.json"  # where an embedded mesh writes its NATS_URL (services/doors/cli/mesh.py)


def running_mesh(home: Path) -> str | None:
    """The NATS_URL of the mesh ``blendmesh up`` runs on ``home``, if one said so."""
    try:
        url = json.loads((home / MESH_INFO).read_text()).get("url")
    except (OSError, ValueError, AttributeError):
        return None
    return url if isinstance(url, str) and url else None


async def read_status(
    settings: Settings, timeout: float, wait: float = health.ANSWERS_WITHIN
) -> MeshStatus:
    """The snapshot, or one saying why NATS could not be asked. A refused login raises:
    that is a mistake to fix, not a state of the mesh."""
    url = settings.nats_url or running_mesh(settings.home)
    if not url:
        return unreachable(
            f"no mesh runs on {settings.home} and NATS_URL is not set: start one with "
            "`blendmesh up`, or set NATS_URL"
        )
    login = login_for(settings.credentials_path, CLIENT)
    refuse_anonymous(url, login, settings.require_auth)
    try:
        nc = await connect(url, "blendmesh-status", login, wait=timeout)
    except LoginRefused:
        raise
    except ConnectionError as exc:
        return unreachable(str(exc))
    try:
        return await health.snapshot(nc, nc.jetstream(timeout=timeout), settings.prefix, wait)
    finally:
        await nc.close()


def _consumers(instance: Instance) -> list[str]:
    return [
        f"{c.durable}: {c.num_pending} pending, {c.num_ack_pending} unacknowledged, "
        f"{c.num_redelivered} redelivered, acknowledged to {c.ack_floor}"
        for c in instance.consumers
    ]


def _pins(instance: Instance) -> list[str]:
    """An executor's catalog, and the runs it leaves to executors of another (ADR 0053)."""
    if instance.catalog_version is None:
        return []
    return [f"tool catalog {instance.catalog_version}", *instance.waiting]


def _blender(instance: Instance) -> list[str]:
    """Each bridge of the executor's pool (ADR 0070), or its one Blender. Neighbours that
    say the same are one entry ("Blender 2-8/8 ... idle"): a pool is up to 8, most of them
    stopped until runs need them (ADR 0078)."""
    bridges = instance.bridges or ([instance.blender] if instance.blender else [])
    said = []
    for b in bridges:
        held = f", holds {b.scene} r{b.revision}" if b.scene else ""
        restarts = f", {b.restarts} restarts" if b.restarts else ""
        state = "up" if b.up else "idle (stopped, starts with the next run)" if b.idle else "DOWN"
        said.append(f"{b.version} {state}{held}{restarts}")
    if len(said) == 1:
        return [f"Blender {said[0]}"]
    shown, first = [], 0
    for end in range(1, len(said) + 1):
        if end == len(said) or said[end] != said[first]:
            which = f"{first + 1}" if end == first + 1 else f"{first + 1}-{end}"
            shown.append(f"Blender {which}/{len(said)} {said[first]}")
            first = end
    return shown


def service_rows(service: ServiceStatus) -> list[dict[str, str]]:
    if not service.instances:
        return [
            {
                "service": service.role,
                "healthy": "MISSING" if service.needed else "-",
                "detail": (service.problem or "") if service.needed else "not running (optional)",
            }
        ]
    return [
        {
            "service": service.role,
            "instance": i.id,
            "healthy": "yes" if i.healthy else "NO",
            "version": i.version,
            "detail": "; ".join([*i.problems, *_blender(i), *_pins(i), *_consumers(i)]),
        }
        for i in service.instances
    ]


def print_status(out: Console, status: MeshStatus) -> None:
    out.print("mesh: ready" if status.ready else "mesh: NOT READY", markup=False, highlight=False)
    for reason in status.reasons:
        out.print(f"  - {reason}", markup=False, highlight=False, soft_wrap=True)
    rows = [row for service in status.services for row in service_rows(service)]
    out.print(
        show.rows_table("services", rows, ["service", "instance", "healthy", "version", "detail"])
    )
    js = status.jetstream
    if not js.ok:
        out.print(f"JetStream: {js.error}", markup=False, highlight=False, soft_wrap=True)
        return
    limit = "no account limit" if js.storage_limit is None else f"{js.storage_left} bytes left"
    out.print(f"JetStream: {js.storage} bytes stored, {limit}", markup=False, highlight=False)
    streams = [
        msgspec.to_builtins(s) | {"problems": "; ".join(s.problems) or None} for s in js.streams
    ]
    columns = ["name", "replicas", "leader", "messages", "bytes", "problems"]
    out.print(show.rows_table("streams", streams, columns))


async def cmd_status(args: argparse.Namespace, settings: Settings, out: Console) -> int:
    wait = health.ANSWERS_WITHIN if args.wait is None else args.wait
    status = await read_status(settings, args.timeout, wait)
    if args.json:
        sys.stdout.write(msgspec.json.encode(status).decode() + "\n")
    else:
        print_status(out, status)
    return EXIT_READY if status.ready else EXIT_NOT_READY
