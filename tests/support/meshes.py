"""Meshes for tests: in this process for integration tests, as ``blendmesh up`` for e2e.

One home for the helpers every test module would otherwise copy: the ``mesh`` fixture
(every service, or some, and a client's bus), a bare mesh to log in to as one role
(contract and security tests), and ``blendmesh up`` started as a user starts it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest_asyncio

from services.doors.cli.mesh import Mesh
from services.runtime.nats.access import CLIENT
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings

BLENDMESH = str(Path(sys.executable).parent / "blendmesh")


@asynccontextmanager
async def client_mesh(
    settings: Settings, name: str = "test-client", services: Sequence[str] | None = None
) -> AsyncIterator[tuple[Mesh, Bus]]:
    """Start ``services`` (every service when None) on ``settings``, and a client's bus
    named ``name``; stop them, and the bus, on exit."""
    running = Mesh(settings) if services is None else Mesh(settings, services=services)
    url = await running.start()
    try:
        bus = await Bus.open(url, settings.prefix, name, running.login(CLIENT))
        try:
            yield running, bus
        finally:
            await bus.close()
    finally:
        await running.stop()


Scope = Literal["function", "module"]


def mesh_fixture(
    scope: Scope = "module", client: str = "test-client", services: Sequence[str] | None = None
) -> Any:
    """A ``mesh`` fixture: ``client_mesh`` on the module's ``mesh_settings`` fixture.

    Assign it in a test module (``mesh = mesh_fixture()``) beside a ``mesh_settings``
    fixture of the same scope. A module-scoped mesh lives on the module's event loop, so
    the module marks its tests ``pytest.mark.asyncio(loop_scope="module")``. ``services``
    narrows the mesh to those services (``("audit",)``: nothing but the test answers).
    """

    @pytest_asyncio.fixture(scope=scope, loop_scope=scope, name="mesh")
    async def mesh(mesh_settings: Settings) -> AsyncIterator[tuple[Mesh, Bus]]:
        async with client_mesh(mesh_settings, client, services) as running:
            yield running

    return mesh


@asynccontextmanager
async def bare_mesh(settings: Settings) -> AsyncIterator[Mesh]:
    """A mesh without services: its nats-server admits only the role users, and its event
    log exists, as every service finds them when it starts. Log in with ``role_bus``."""
    running = Mesh(settings, services=())
    await running.start()
    try:
        yield running
    finally:
        await running.stop()


def bare_mesh_fixture(scope: Scope = "module") -> Any:
    """A ``mesh`` fixture: ``bare_mesh`` on the module's ``mesh_settings`` fixture, used
    as ``mesh_fixture`` is. Tests log in to it with ``role_bus``."""

    @pytest_asyncio.fixture(scope=scope, loop_scope=scope, name="mesh")
    async def mesh(mesh_settings: Settings) -> AsyncIterator[Mesh]:
        async with bare_mesh(mesh_settings) as running:
            yield running

    return mesh


@asynccontextmanager
async def role_bus(mesh: Mesh, role: str) -> AsyncIterator[Bus]:
    """A bus logged in as ``role`` (``services.runtime.nats.access``), closed on exit."""
    bus = await Bus.open(mesh.url, mesh.settings.prefix, f"test-{role}", mesh.login(role))
    try:
        yield bus
    finally:
        await bus.close()


def command_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment for a ``blendmesh`` command, plus ``extra``: without
    NATS_URL, so the command starts a mesh of its own unless ``extra`` names one."""
    env = {k: v for k, v in os.environ.items() if k != "NATS_URL"}
    env.update(extra or {})
    return env


@dataclass(frozen=True)
class Up:
    """A running ``blendmesh up`` and what its first line says."""

    proc: subprocess.Popen[str]
    banner: str
    nats_url: str
    gateway_url: str
    rest: list[str]  # the rest of its stderr, once it has ended

    def stderr_after_exit(self, timeout: float = 10.0) -> str:
        """Everything it wrote after its first line; call once the process has ended."""
        self.proc.wait(timeout=timeout)
        for _ in range(int(timeout * 10)):
            if self.rest:
                break
            time.sleep(0.1)
        return "".join(self.rest)


@contextmanager
def blendmesh_up(
    home: Path, *args: str, env: Mapping[str, str] | None = None, log: Path | None = None
) -> Iterator[Up]:
    """``blendmesh --home HOME up ARGS``, yielded once it says the mesh is up.

    On exit it is stopped with SIGINT (unless the test stopped it already) and waited
    for; its exit code is ``proc.returncode``. Its stderr is read to the end meanwhile,
    so a chatty mesh never blocks on a full pipe; with ``log``, copied there line by line
    as it comes, for a mesh that outlives many tests.
    """
    # Any free port unless the test names one: two tests' meshes on the default 8000, run
    # at once by xdist, would otherwise race for it.
    port = () if any(a == "--port" or a.startswith("--port=") for a in args) else ("--port", "0")
    proc = subprocess.Popen(
        [BLENDMESH, "--home", str(home), "up", *args, *port],
        stderr=subprocess.PIPE,
        text=True,
        env=command_env(env),
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    assert proc.stderr is not None
    drain: threading.Thread | None = None
    try:
        banner = proc.stderr.readline()
        assert "NATS_URL=" in banner and " gateway " in banner, banner
        rest: list[str] = []
        stderr = proc.stderr

        def read_to_end() -> None:
            if log is None:
                rest.append(stderr.read())
                return
            lines = []
            with log.open("w") as copy:
                for line in stderr:
                    copy.write(line)
                    copy.flush()
                    lines.append(line)
            rest.append("".join(lines))  # whole, once it ended, as without a log

        drain = threading.Thread(target=read_to_end, daemon=True)
        drain.start()
        yield Up(
            proc=proc,
            banner=banner,
            nats_url=banner.split("NATS_URL=")[1].split(",")[0].split()[0],
            gateway_url=banner.split(" gateway ")[1].split()[0],
            rest=rest,
        )
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if drain is not None:
            drain.join(timeout=10)
        proc.stderr.close()
