"""Hosting a service: the bus handle every app gets, and the ``__main__`` runner.

Each ``services/<name>/app.py`` exposes ``async def start(settings, bus) -> Running``. The
same function serves ``python -m services.<name>`` (one process per service, the Procfile)
and the embedded mesh (every service as tasks of one process).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from nats.aio.client import Client
from nats.js import JetStreamContext

from services.runtime.access import CredentialsError, Login, login_for
from services.runtime.bus import (
    JetStreamPublisher,
    LoginRefused,
    connect,
    ensure_event_log,
    refuse_anonymous,
    use_replicas,
    wait_for_jetstream,
)
from services.runtime.consumer import ConsumerLoop, ConsumerSpec
from services.runtime.home import private_home
from services.runtime.ready import READY_WAIT
from services.runtime.settings import Settings, SettingsError
from services.runtime.tracing import configure_tracing, shutdown_tracing

log = logging.getLogger("blendmesh.host")


@dataclass
class Bus:
    """A connection to the mesh's NATS, with the event log ensured."""

    nc: Client
    js: JetStreamContext
    publisher: JetStreamPublisher
    prefix: str
    ready_wait: float = READY_WAIT  # seconds a start waits for JetStream (services.runtime.ready)

    @classmethod
    async def open(
        cls,
        url: str,
        prefix: str,
        name: str,
        login: Login | None = None,
        replicas: int = 1,
        ready_wait: float = READY_WAIT,
    ) -> Bus:
        """Connect; what this bus creates (the log, a bucket) gets ``replicas`` copies.
        JetStream and the log are waited for ``ready_wait`` seconds at most."""
        nc = await connect(url, name, login)
        try:
            js = nc.jetstream(timeout=10)
            use_replicas(js, replicas)
            await wait_for_jetstream(js, ready_wait)
            await ensure_event_log(js, prefix, ready_wait)
        except BaseException:
            await nc.close()
            raise
        publisher = JetStreamPublisher(js, prefix)
        return cls(nc=nc, js=js, publisher=publisher, prefix=prefix, ready_wait=ready_wait)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.nc.drain()


class Running(Protocol):
    """A started service."""

    name: str

    async def stop(self) -> None: ...


@dataclass
class ConsumerService:
    """A service made of consumer loops plus whatever it must close when it stops."""

    name: str
    loops: list[ConsumerLoop] = field(default_factory=list)
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    async def add(self, bus: Bus, spec: ConsumerSpec) -> None:
        loop = ConsumerLoop(bus.js, bus.publisher, bus.prefix, spec)
        await loop.start(bus.ready_wait)
        self.loops.append(loop)

    async def stop(self) -> None:
        """Stop consuming, then close everything, even if a step fails on the way."""
        results = await asyncio.gather(
            *(loop.stop() for loop in self.loops), return_exceptions=True
        )
        for close in reversed(self.closers):
            try:
                await close()
            except Exception:  # the remaining closers must still run
                log.exception("%s: closing failed", self.name)
        for result in results:
            if isinstance(result, Exception):
                log.error("%s: stopping a consumer failed: %r", self.name, result)


StartFn = Callable[[Settings, Bus], Awaitable[Running]]


async def _open_service_bus(settings: Settings, name: str, wait: float = 30.0) -> Bus:
    """Connect as the service's role. Under a Procfile the nats process may not have
    written its credentials yet: an anonymous login that is refused is tried again."""
    deadline = asyncio.get_running_loop().time() + wait
    while True:
        login = login_for(settings.credentials_path, name)
        try:
            refuse_anonymous(settings.nats_url or "", login, settings.require_auth)
            return await Bus.open(
                settings.nats_url or "",
                settings.prefix,
                f"blendmesh-{name}",
                login,
                settings.replicas,
                settings.start_wait,
            )
        except LoginRefused:
            if login is not None or asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.5)


def run_service(name: str, start: StartFn) -> None:
    """Run one service in this process until SIGINT or SIGTERM (``python -m``)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    settings = Settings.from_env()
    if not settings.nats_url:
        raise SystemExit(
            f"{name}: NATS_URL is not set; start the mesh with `blendmesh up` "
            "or point NATS_URL at a nats-server with JetStream"
        )
    private_home(settings.home)

    async def main() -> None:
        bus = await _open_service_bus(settings, name)
        running = await start(settings, bus)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        await running.stop()
        await bus.close()

    configure_tracing(settings)
    try:
        asyncio.run(main())
    except (ConnectionError, CredentialsError, SettingsError) as exc:  # unreachable, refused
        raise SystemExit(f"{name}: {exc}") from None
    finally:
        shutdown_tracing()
