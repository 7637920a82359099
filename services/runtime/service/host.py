"""Hosting a service: the bus handle every app gets, and the ``__main__`` runner.

Each ``services/<name>/app.py`` exposes ``async def start(settings, bus) -> Running``. The
same function serves ``python -m services.<name>`` (one process per service, the Procfile)
and the embedded mesh (every service as tasks of one process).

A service that cannot start, or whose essential work ends by itself (``Running.failed``),
ends the process that hosts it with an error that names it: a supervisor then restarts the
process, instead of finding it alive with a dead service inside.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from nats.aio.client import Client
from nats.js import JetStreamContext

from contracts.errors import BlendmeshError
from services.runtime.nats.access import CredentialsError, Login, login_for
from services.runtime.nats.bus import connect, wait_for_jetstream
from services.runtime.nats.login import LoginRefused, refuse_anonymous
from services.runtime.nats.ready import READY_WAIT
from services.runtime.nats.retry import GaveUp, until
from services.runtime.nats.streams import ensure_event_log, use_replicas
from services.runtime.service import heap, log_context
from services.runtime.service.consumer import ConsumerLoop
from services.runtime.service.consumer_spec import ConsumerSpec
from services.runtime.service.home import private_home
from services.runtime.service.metrics_server import serve_metrics
from services.runtime.service.publishers import JetStreamPublisher
from services.runtime.service.settings import Settings, SettingsError
from services.runtime.service.tracing import configure_tracing, shutdown_tracing

log = logging.getLogger("blendmesh.host")
T = TypeVar("T")


# Seconds a service tries a NATS server that does not listen yet: under a Procfile the
# services may start before nats-server.
CONNECT_WAIT = 30.0


@dataclass
class Bus:
    """A connection to the mesh's NATS, with the event log ensured."""

    nc: Client
    js: JetStreamContext
    publisher: JetStreamPublisher
    prefix: str
    ready_wait: float = READY_WAIT  # seconds a start waits for JetStream (runtime.nats.ready)

    @classmethod
    async def open(
        cls,
        url: str,
        prefix: str,
        name: str,
        login: Login | None = None,
        replicas: int = 1,
        ready_wait: float = READY_WAIT,
        connect_wait: float = CONNECT_WAIT,
    ) -> Bus:
        """Connect; what this bus creates (the log, a bucket) gets ``replicas`` copies.
        A server that does not listen is tried for ``connect_wait`` seconds; JetStream and
        the log are waited for ``ready_wait`` seconds at most."""
        nc = await connect(url, name, login, connect_wait)
        try:
            js = nc.jetstream(timeout=10)
            use_replicas(js, replicas)
            await wait_for_jetstream(js, ready_wait)
            await ensure_event_log(js, prefix, ready_wait)
        except BaseException:
            await nc.close()
            raise
        publisher = JetStreamPublisher(js, prefix, nc)
        return cls(nc=nc, js=js, publisher=publisher, prefix=prefix, ready_wait=ready_wait)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.nc.drain()


class Running(Protocol):
    """A started service."""

    name: str

    async def stop(self) -> None: ...

    async def failed(self) -> BaseException:
        """Wait until the service can no longer work (a consumer loop or another part it
        cannot live without ended by itself) and return why. Never returns for a service
        that is working, nor once it is stopped."""
        ...


class ServiceFailed(BlendmeshError, RuntimeError):
    """A service could not start, or died: what ends ``blendmesh up`` or its process."""

    def __init__(self, name: str, error: BaseException, starting: bool = False) -> None:
        self.name = name
        self.error = error
        happened = "could not start" if starting else "died"
        super().__init__(f"{name} {happened}: {describe(error)}")


def describe(error: BaseException) -> str:
    """An error in one line: blendmesh's own say what happened; others are named too."""
    said = str(error)
    if type(error).__module__.startswith(("services.", "contracts.")) and said:
        return said
    return f"{type(error).__name__}: {said}" if said else type(error).__name__


async def never() -> BaseException:
    """``failed()`` of a service that ends only when it is stopped."""
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


async def first_of(waits: Iterable[Awaitable[T]]) -> T:
    """The result of whichever of ``waits`` ends first (forever when there are none);
    the others are cancelled."""
    tasks = [asyncio.ensure_future(w) for w in waits]
    if not tasks:
        await never()
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        return done.pop().result()
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


@dataclass
class ConsumerService:
    """A service made of consumer loops plus whatever it must close when it stops.

    ``essentials`` are the parts besides the loops it cannot live without (the executor's
    Blender bridge): each waits until its part is gone for good and returns why.
    """

    name: str
    loops: list[ConsumerLoop] = field(default_factory=list)
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    essentials: list[Callable[[], Awaitable[BaseException]]] = field(default_factory=list)

    async def add(self, bus: Bus, spec: ConsumerSpec) -> None:
        loop = ConsumerLoop(bus.js, bus.publisher, bus.prefix, spec)
        await loop.start(bus.ready_wait)
        self.loops.append(loop)

    def problems(self) -> list[str]:
        """What its loops know is wrong with their work now (a store that refuses writes)."""
        return [problem for loop in self.loops if (problem := loop.problem()) is not None]

    async def failed(self) -> BaseException:
        return await first_of(
            [loop.failed() for loop in self.loops] + [part() for part in self.essentials]
        )

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
    anonymous = True  # whether the last attempt found no credentials to log in with

    async def attempt() -> Bus:
        nonlocal anonymous
        login = login_for(settings.credentials_path, name)
        anonymous = login is None
        refuse_anonymous(settings.nats_url or "", login, settings.require_auth)
        return await Bus.open(
            settings.nats_url or "",
            settings.prefix,
            f"blendmesh-{name}",
            login,
            settings.replicas,
            settings.start_wait,
        )

    def not_written_yet(exc: BaseException) -> bool:
        return isinstance(exc, LoginRefused) and anonymous

    try:
        return await until(
            f"the credentials of {name}", attempt, wait, pause=0.5, retry_on=not_written_yet
        )
    except GaveUp as gave_up:
        raise gave_up.cause from None  # the server's last refusal says what to do


async def serve(name: str, start: StartFn, bus: Bus, settings: Settings) -> None:
    """Start the service on ``bus`` and run it until SIGINT or SIGTERM; raise
    ``ServiceFailed`` when it cannot start or dies, once it is stopped."""
    try:
        running = await start(settings, bus)
    except Exception as exc:
        log.info("%s could not start", name, exc_info=True)
        raise ServiceFailed(name, exc, starting=True) from exc
    heap.settle()  # up: what it keeps from now on is what the collector's passes walk
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        ended = await first_of([stop.wait(), running.failed()])
    finally:
        heap.thaw()
        await running.stop()
    if isinstance(ended, BaseException):
        raise ServiceFailed(name, ended) from ended


def run_service(name: str, start: StartFn) -> None:
    """Run one service in this process until SIGINT or SIGTERM (``python -m``); exit
    non-zero, naming the service and why, when it cannot start or dies."""
    log_context.configure(logging.INFO)
    settings = Settings.from_env()
    if not settings.nats_url:
        raise SystemExit(
            f"{name}: NATS_URL is not set; start the mesh with `blendmesh up` "
            "or point NATS_URL at a nats-server with JetStream"
        )
    private_home(settings.home)

    async def main() -> None:
        # Before the bus: a scrape during a slow start shows the process is there.
        exported = await serve_metrics(settings)
        try:
            bus = await _open_service_bus(settings, name)
            try:
                await serve(name, start, bus, settings)
            finally:
                await bus.close()
        finally:
            if exported is not None:
                await exported.stop()

    configure_tracing(settings)
    try:
        asyncio.run(main())
    except ServiceFailed as exc:
        raise SystemExit(str(exc)) from None
    except (ConnectionError, CredentialsError, SettingsError) as exc:  # unreachable, refused
        raise SystemExit(f"{name}: {exc}") from None
    finally:
        shutdown_tracing()
