"""``blendmesh up``: the mesh and its HTTP gateway in the foreground until Ctrl-C, or until
the mesh can no longer work, which ends it loudly so a supervisor starts it again."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console

from services.doors.cli.common import EXIT_MESH, EXIT_OK
from services.doors.cli.mesh import Mesh
from services.doors.gateway.app import GatewayServer, create_app
from services.runtime.nats.access import CLIENT
from services.runtime.server import jetstream_watch
from services.runtime.service.host import Bus, first_of
from services.runtime.service.settings import Settings


@contextmanager
def _stop_signals() -> Iterator[asyncio.Event]:
    """An event set by Ctrl-C or SIGTERM, installed before anything starts so a signal
    that arrives early still stops the mesh cleanly."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        yield stop
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


async def _until(stop: asyncio.Event, server: GatewayServer, mesh: Mesh, bus: Bus) -> str | None:
    """Until a stop signal, the gateway ending by itself, or the mesh failing (its
    nats-server exited, a service died, JetStream stopped); then how it failed, or None."""
    served = asyncio.ensure_future(server.wait())
    stopped = asyncio.ensure_future(stop.wait())
    died = asyncio.ensure_future(first_of([mesh.wait(), jetstream_watch.stopped(bus.js)]))
    await asyncio.wait([served, stopped, died], return_when=asyncio.FIRST_COMPLETED)
    for task in (served, stopped, died):
        task.cancel()
    return died.result() if died.done() and not died.cancelled() else None


async def cmd_up(settings: Settings, err: Console, port: int) -> int:
    with _stop_signals() as stop:
        mesh = Mesh(settings)
        url = await mesh.start()
        bus: Bus | None = None
        server: GatewayServer | None = None
        try:
            bus = await Bus.open(
                url,
                settings.prefix,
                "blendmesh-gateway",
                mesh.login(CLIENT),
                settings.replicas,
                settings.start_wait,
            )
            app = create_app(settings, bus)
            server = GatewayServer(app, port=port)
            http = await server.start()
            executors = f", {settings.executors} executors" if settings.executors > 1 else ""
            up = f"blendmesh mesh is up: NATS_URL={url}{executors} gateway {http}"
            err.print(
                f"{up}  (Ctrl-C stops it)",
                markup=False,
                highlight=False,
            )
            if mesh.embedded:
                err.print(f"NATS users: {settings.credentials_path}", markup=False, highlight=False)
            if mesh.limits is not None:
                err.print(mesh.limits.report(), markup=False, highlight=False)
            if not len(app.state.auth):
                err.print(
                    "neither BLENDMESH_API_TOKENS nor BLENDMESH_OAUTH_ISSUER is set: "
                    "every /api request answers 401"
                )
            died = await _until(stop, server, mesh, bus)
            if died is not None:
                # Without its server, or one of its services, the mesh cannot do its work.
                # Stop loudly, so a supervisor (systemd, a container runtime) restarts it.
                err.print(
                    f"blendmesh up: {died}\nthe mesh stops; start it again with `blendmesh up`",
                    markup=False,
                    highlight=False,
                )
                return EXIT_MESH
        finally:
            if server is not None:
                await server.stop()
            if bus is not None:
                await bus.close()
            await mesh.stop()
    return EXIT_OK
