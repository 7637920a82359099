"""Each Procfile process exits non-zero, saying why, when what it runs cannot start or
dies: a supervisor (honcho, systemd) sees the exit, where a live process with a dead
service inside would look well."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import pytest
import pytest_asyncio
from nats.js.errors import NotFoundError

from contracts import subjects
from services.executor.adapters.supervisor import RESTART_LIMIT
from services.runtime.nats import access
from services.runtime.server.embedded import EmbeddedNats, prepare_streams
from services.runtime.service.host import Bus
from tests.support.bridges import bridge_pids
from tests.support.clusters import NatsCluster, free_ports
from tests.support.meshes import command_env

pytestmark = pytest.mark.timeout(240)

PREFIX = "bmproc"
ROOT = Path(__file__).resolve().parents[2]


@pytest_asyncio.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[str, Path]]:
    """A server with the mesh's users and streams, as the Procfile's nats line makes it."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    credentials = home / "nats-credentials.json"
    server = EmbeddedNats.secured(tmp_path / "nats", credentials, PREFIX)
    url = await server.start()
    await prepare_streams(url, PREFIX, access.login_for(credentials, access.ADMIN))
    try:
        yield url, home
    finally:
        await server.stop()


def service(name: str, env: Mapping[str, str]) -> subprocess.Popen[str]:
    """``python -m services.<name>``, as a Procfile line starts it."""
    return subprocess.Popen(
        [sys.executable, "-m", f"services.{name}"],
        cwd=ROOT,
        env=command_env({"BLENDMESH_PREFIX": PREFIX, **env}),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


async def consuming(url: str, home: Path, durable: str, within: float = 60) -> None:
    """Once a process waits on the durable consumer ``durable``."""
    admin = access.login_for(home / "nats-credentials.json", access.ADMIN)
    bus = await Bus.open(url, PREFIX, "test-admin", admin)
    try:
        for _ in range(int(within / 0.1)):
            with contextlib.suppress(NotFoundError):
                info = await bus.js.consumer_info(subjects.stream_name(PREFIX), durable)
                if info.num_waiting:
                    return
            await asyncio.sleep(0.1)
    finally:
        await bus.close()
    raise AssertionError(f"nothing consumes {durable} after {within} s")


async def ended(proc: subprocess.Popen[str], within: float = 60) -> tuple[int, str]:
    try:
        _, err = await asyncio.to_thread(proc.communicate, timeout=within)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        raise AssertionError(f"still running after {within} s:\n{err[-3000:]}") from None
    return proc.returncode, err


async def test_executor_process_when_its_blender_keeps_dying_exits_naming_it(
    served: tuple[str, Path],
) -> None:
    url, home = served
    proc = service(
        "executor", {"NATS_URL": url, "BLENDMESH_HOME": str(home), "BLENDMESH_PREVIEWS": "0"}
    )
    await consuming(url, home, "executor")  # started: from now on it can only die
    killed: set[int] = set()
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        for pid in set(bridge_pids(proc.pid)) - killed:
            os.kill(pid, signal.SIGKILL)
            killed.add(pid)
        await asyncio.sleep(0.02)
    code, said = await ended(proc)
    assert code != 0
    assert len(killed) == RESTART_LIMIT + 1
    assert "executor died: the Blender bridge kept dying" in said.splitlines()[-1]


async def test_policy_process_when_it_cannot_start_exits_naming_it(
    served: tuple[str, Path], tmp_path: Path
) -> None:
    url, home = served
    missing = tmp_path / "no-policies"
    proc = service(
        "policy",
        {"NATS_URL": url, "BLENDMESH_HOME": str(home), "BLENDMESH_POLICY_DIR": str(missing)},
    )
    code, said = await ended(proc)
    assert code != 0
    last = said.splitlines()[-1]
    assert last == f"policy could not start: policy folder {missing} does not exist"


async def test_planner_process_when_jetstream_never_answers_gives_up_at_its_deadline(
    tmp_path: Path,
) -> None:
    cluster = NatsCluster(tmp_path / "cluster", None, PREFIX)
    url = await cluster.servers["n1"].start()  # n2 and n3 never come: no meta leader
    try:
        env = {
            "NATS_URL": url,
            "BLENDMESH_HOME": str(tmp_path / "home"),
            "BLENDMESH_REPLICAS": "3",
            "BLENDMESH_START_WAIT": "2",
        }
        began = time.monotonic()
        code, said = await ended(service("planner", env), within=30)
    finally:
        await cluster.stop()
    assert code != 0 and time.monotonic() - began < 20
    last = said.splitlines()[-1]
    assert last.startswith("planner: JetStream was not ready within 2 s"), last
    assert "BLENDMESH_START_WAIT" in last


async def test_nats_process_when_its_server_dies_exits_naming_it(tmp_path: Path) -> None:
    (port,) = free_ports(1)
    command = [sys.executable, "-m", "services.runtime.server.embedded", "--port", str(port)]
    proc = subprocess.Popen(
        [*command, "--store", str(tmp_path / "nats")],
        cwd=ROOT,
        env=command_env({"BLENDMESH_HOME": str(tmp_path / "home"), "BLENDMESH_PREFIX": PREFIX}),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), 60)
    assert line.startswith("NATS_URL="), line
    (server,) = children_named(proc.pid, "nats-server")
    os.kill(server, signal.SIGKILL)
    code, said = await ended(proc, within=30)
    assert code != 0
    assert f"nats: nats-server {server} exited with code -9" in said


def children_named(parent: int, name: str) -> list[int]:
    """The pids of the processes named ``name`` whose parent is ``parent`` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            stat = entry.joinpath("stat").read_text() if entry.name.isdigit() else ""
        except OSError:
            continue
        if not stat:
            continue
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        if ppid == parent and stat[stat.index("(") + 1 : stat.rindex(")")] == name:
            found.append(int(entry.name))
    return found
