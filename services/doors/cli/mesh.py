"""The embedded mesh: nats-server plus every service, started and stopped together.

Used by ``blendmesh run`` (nothing running before, nothing left after) and ``blendmesh
up``. Services run as tasks of this process, each with its own NATS connection, exactly
as they would in their own processes (docs/adr/0002-embedded-mesh-in-one-process.md);
with BLENDMESH_AUDIT_APART the audit projection is a child process instead, started and
stopped with the rest (``mesh_apart.py``, ADR 0070).
The mesh starts whole or not at all: when one service cannot start, the others are
stopped before the error is raised. ``wait()`` says when a running mesh can no longer
work: its nats-server exited, or a service died.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import importlib
import json
import logging
import os
import socket
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import urlparse

from contracts.errors import BlendmeshError
from services.runtime.nats.access import ADMIN, CLIENT, Login, login_for
from services.runtime.nats.login import joins_anonymously, refuse_anonymous
from services.runtime.service import heap
from services.runtime.service.host import Bus, Running, ServiceFailed, StartFn, first_of
from services.runtime.service.settings import Settings

# What starts a mesh's parts (nats-server, its stores, their limits, the home) is imported
# where they are started: a command that joins a running mesh (NATS_URL) starts none of
# them, and a person waits for its answer (tests/unit/doors/test_cli_imports.py).
if TYPE_CHECKING:
    from services.runtime.server.embedded import EmbeddedNats
    from services.runtime.server.store_guard import StoreGuard
    from services.runtime.service.store_limits import StoreLimits

log = logging.getLogger("blendmesh.mesh")

# Each service's app module, imported only when the service starts: a command that joins
# a running mesh (NATS_URL) never pays for the planner's SDK, the executor or the gateway.
SERVICES: dict[str, str] = {
    "audit": "services.audit.app",
    "planner": "services.planner.app",
    "policy": "services.policy.app",
    "executor": "services.executor.app",
    "guardians": "services.guardians.app",
    "door": "services.doors.bus.app",
}


def _start_fn(name: str) -> StartFn:
    start: StartFn = importlib.import_module(SERVICES[name]).start
    return start


class MeshBusy(BlendmeshError, RuntimeError):
    """Another embedded mesh owns this home directory."""


class Mesh:
    """A running mesh; ``url`` is where its NATS server listens."""

    def __init__(self, settings: Settings, services: Sequence[str] = tuple(SERVICES)) -> None:
        self.settings = settings
        self.services = list(services)
        self.url = settings.nats_url or ""
        self._server: EmbeddedNats | None = None
        self._lock: IO[str] | None = None
        # A service in a child process (``mesh_apart``) has no bus of the mesh's.
        self._running: list[tuple[Running, Bus | None]] = []
        self.limits: StoreLimits | None = None  # JetStream's, for an embedded server
        self.guard: StoreGuard | None = None  # keeps its store writable while ``wait`` runs

    @staticmethod
    def all_services() -> list[str]:
        return list(SERVICES)

    @property
    def embedded(self) -> bool:
        return not self.settings.nats_url

    async def start(self) -> str:
        if not self.embedded and not self.services:  # a command joins the mesh at NATS_URL
            refuse_anonymous(self.url, self.login(CLIENT), self.settings.require_auth)
            return self.url
        from services.runtime.server.embedded import EmbeddedNats, prepare_streams
        from services.runtime.service.home import private_home
        from services.runtime.service.store_limits import store_limits

        # Before the first file is written in it.
        await asyncio.to_thread(private_home, self.settings.home)
        if self.embedded:
            self._take_lock()
            self.limits = await asyncio.to_thread(
                store_limits, self.settings.nats_store, self.settings.env
            )
            self.url = await self._start_server(EmbeddedNats)
            self._write_info()
            # The admin user creates every stream; the services' users may not.
            await prepare_streams(
                self.url,
                self.settings.prefix,
                self.login(ADMIN),
                self.settings.replicas,
                self.settings.start_wait,
            )
        else:  # every role's login comes from the same credentials file
            refuse_anonymous(self.url, self.login(CLIENT), self.settings.require_auth)
            if joins_anonymously(self.url, self.login(ADMIN)):
                # A server without users: no admin makes the stores there, so the mesh
                # does, and waits until each has a leader, before its services use them.
                await prepare_streams(
                    self.url,
                    self.settings.prefix,
                    None,
                    self.settings.replicas,
                    self.settings.start_wait,
                )
        # Executors scale out: each instance has its own bridge and binds the same durable
        # consumer, so runs on different scenes proceed in parallel.
        names = [
            n
            for name in self.services
            for n in [name] * (self.settings.executors if name == "executor" else 1)
        ]
        try:
            await _all_or_none([self._start_one(n) for n in names])
        except BaseException:
            await self.stop()
            raise
        heap.settle()  # the services are up: what they keep from now on is what passes walk
        return self.url

    def apart(self, name: str) -> bool:
        """Whether ``name`` runs in a child process of its own (BLENDMESH_AUDIT_APART):
        only beside an embedded server, whose admin login the mesh holds to see it up."""
        return name == "audit" and self.settings.audit_apart and self.embedded

    async def _start_apart(self, name: str) -> None:
        from services.doors.cli.mesh_apart import spawn

        settings = self.settings
        probe = await Bus.open(
            self.url, settings.prefix, "blendmesh-mesh", self.login(ADMIN), settings.replicas
        )
        try:
            child = await spawn(name, settings, self.url, probe)
        except Exception as exc:
            raise ServiceFailed(name, exc, starting=True) from exc
        finally:
            await probe.close()
        self._running.append((child, None))

    async def _start_one(self, name: str) -> None:
        if self.apart(name):
            await self._start_apart(name)
            return
        settings = self.settings
        bus = await Bus.open(
            self.url,
            settings.prefix,
            f"blendmesh-{name}",
            self.login(name),
            settings.replicas,
            settings.start_wait,
        )
        try:
            service = await _start_fn(name)(self.settings, bus)
        except BaseException as exc:
            await bus.close()
            if isinstance(exc, Exception):
                log.info("%s could not start", name, exc_info=True)
                raise ServiceFailed(name, exc, starting=True) from exc
            raise
        self._running.append((service, bus))

    async def _start_server(self, server_type: type[EmbeddedNats]) -> str:
        """Start the embedded nats-server on the port this home's mesh had last time, when
        that port is free, so the login files handed out (``blendmesh users add``) and a
        ``NATS_URL`` someone exported keep working across restarts; on any other port
        otherwise (a port taken in between: the server then cannot listen, and starts
        again on a free one)."""
        from services.runtime.server.nats_setup import EmbeddedServerError

        last = await asyncio.to_thread(last_port, self.settings.home)
        for port in ([last] if last else []) + [-1]:
            self._server = server_type.secured(
                self.settings.nats_store,
                self.settings.credentials_path,
                self.settings.prefix,
                port=port,
                limits=self.limits,
            )
            try:
                url = await self._server.start()
            except EmbeddedServerError:
                await self._server.stop()  # its files; the process has exited
                if port == -1:
                    raise
                log.info("port %s of the last start is taken; taking a free one", port)
                continue
            await asyncio.to_thread(remember_port, self.settings.home, url)
            return url
        raise AssertionError("unreachable: the last try takes any free port")

    async def wait(self) -> str:
        """Wait until the mesh can no longer work, and say why: its nats-server exited, or a
        service died (the message names it). Forever while neither happens.

        Meanwhile the server it runs is guarded: a disk too full for JetStream makes it
        refuse writes at once, and room again makes it take them (``store_guard``)."""

        async def died(name: str, service: Running) -> str:
            return str(ServiceFailed(name, await service.failed()))

        waits = [died(service.name, service) for service, _ in self._running]
        if self._server is not None:
            from services.runtime.server.store_guard import StoreGuard, disk_free, limits_for

            store = self.settings.nats_store
            self.guard = StoreGuard(
                self._server, disk_free(store), limits_for(store, self.settings.env), self.limits
            )
            waits.append(self.guard.run())
        return await first_of([self.server_exited(), *waits])

    @property
    def server_pid(self) -> int | None:
        """The embedded nats-server's process id (None for an external server), for the
        benchmarks that count its fsyncs."""
        return None if self._server is None else self._server.pid

    async def server_exited(self) -> str:
        """Wait until the embedded nats-server dies; forever for an external server."""
        if self._server is None:
            await asyncio.Event().wait()
        assert self._server is not None
        return await self._server.exited()

    def login(self, role: str) -> Login | None:
        """How a process of ``role`` logs in to this mesh's NATS (None: anonymously)."""
        return login_for(self.settings.credentials_path, role)

    async def stop(self) -> None:
        heap.thaw()
        running, self._running = self._running, []
        for service, bus in reversed(running):
            with contextlib.suppress(Exception):
                await service.stop()
            if bus is not None:
                await bus.close()
        try:
            if self._server is not None:
                server, self._server = self._server, None
                await server.stop()
        finally:  # a server that failed to stop must not keep the home locked
            self._release_lock()

    def _take_lock(self) -> None:
        home = self.settings.home
        home.mkdir(parents=True, exist_ok=True)
        lock = open(home / "mesh.lock", "a+")  # noqa: SIM115 - held for the mesh's lifetime
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            url = _read_info(home).get("url", "")
            hint = f"export NATS_URL={url} to use it" if url else "stop it first"
            raise MeshBusy(
                f"another blendmesh mesh is running on {home}; {hint}, "
                "or pass --home DIR for a separate one"
            ) from None
        self._lock = lock

    def _write_info(self) -> None:
        info = {"url": self.url, "pid": os.getpid(), "prefix": self.settings.prefix}
        (self.settings.home / "mesh.json").write_text(json.dumps(info))

    def _release_lock(self) -> None:
        if self._lock is not None:
            (self.settings.home / "mesh.json").unlink(missing_ok=True)
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None

    async def __aenter__(self) -> Mesh:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


async def _all_or_none(starts: Sequence[Coroutine[Any, Any, None]]) -> None:
    """Run ``starts`` together; at the first that fails, cancel the others, wait until
    they have ended, and raise its error (a start still running could otherwise finish
    after the mesh was stopped, and live on)."""
    tasks = [asyncio.ensure_future(start) for start in starts]
    try:
        for task in asyncio.as_completed(tasks):
            await task
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


PORT_FILE = "nats-port"  # the embedded server's port, kept across starts of one home


def last_port(home: Path) -> int | None:
    """The port the mesh on ``home`` listened on last time, if it is free now."""
    try:
        port = int((home / PORT_FILE).read_text().strip())
    except (OSError, ValueError):
        return None
    if not 1024 <= port <= 65535:
        return None
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return None
    return port


def remember_port(home: Path, url: str) -> None:
    port = urlparse(url).port
    if port:
        (home / PORT_FILE).write_text(f"{port}\n")


def _read_info(home: Path) -> dict[str, str]:
    try:
        return json.loads((home / "mesh.json").read_text())
    except (OSError, ValueError):
        return {}
