"""Health when the mesh cannot take a run: a mesh started without its executor, a NATS
server that has stopped, and a server without JetStream. ``blendmesh status`` exits 3
saying what is missing and what to start; the gateway's ``/readyz`` answers 503 with the
reasons, and its ``/healthz`` says when its own NATS connection is gone."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import pytest_asyncio

from services.doors.cli import main as cli
from services.doors.cli.mesh import Mesh
from services.doors.gateway.app import create_app
from services.doors.gateway.auth import Tokens
from services.doors.gateway.health import ReadinessProbe
from services.runtime.nats import access
from services.runtime.nats.bus import connect
from services.runtime.server.embedded import EmbeddedNats, prepare_streams, server_binary
from services.runtime.service import health
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.clusters import free_ports

pytestmark = pytest.mark.integration

PREFIX = "bmsick"
# The services run on this test's event loop: on a busy machine an answer can take longer
# than a status's default wait, and these tests say who answered.
WAIT = 2.0
MISSING = "no executor answers: start one (`python -m services.executor`"


@pytest_asyncio.fixture
async def without_executor(tmp_path: Path) -> AsyncIterator[tuple[Mesh, Bus]]:
    settings = Settings(home=tmp_path / "home", prefix=PREFIX, user="ana", previews=False)
    services = [name for name in Mesh.all_services() if name != "executor"]
    async with Mesh(settings, services=services) as mesh:
        bus = await Bus.open(mesh.url, PREFIX, "test-client", mesh.login(access.CLIENT))
        try:
            yield mesh, bus
        finally:
            await bus.close()


def status_command(home: Path, *args: str) -> tuple[int, float]:
    started = time.monotonic()
    code = cli.main(["--home", str(home), "status", *args])
    return code, time.monotonic() - started


async def test_mesh_without_executor_when_asked_is_not_ready_naming_the_executor(
    without_executor: tuple[Mesh, Bus],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    mesh, bus = without_executor
    status = await health.snapshot(bus.nc, bus.js, PREFIX, WAIT)
    assert not status.ready and len(status.reasons) == 1
    assert status.reasons[0].startswith(MISSING) and "blendmesh up" in status.reasons[0]
    others = {s.role for s in status.services if s.instances}
    assert others == {"planner", "policy", "guardians", "audit", "door"}

    monkeypatch.setenv("NATS_URL", mesh.url)
    monkeypatch.setenv("BLENDMESH_PREFIX", PREFIX)
    code, _ = await asyncio.to_thread(status_command, mesh.settings.home, "--wait", str(WAIT))
    shown = capsys.readouterr().out
    assert code == 3
    assert shown.startswith(f"mesh: NOT READY\n  - {MISSING}")
    rows = [line for line in shown.splitlines() if line.startswith("│ executor ")]
    assert len(rows) == 1 and "MISSING" in rows[0]

    app = create_app(mesh.settings, bus, Tokens({}))
    app.state.readiness = ReadinessProbe(bus, wait=WAIT)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://gateway"
    ) as api:
        ready = await api.get("/readyz")
        assert ready.status_code == 503
        body = ready.json()
        assert body["ready"] is False and body["reasons"][0].startswith(MISSING)
        executor = next(s for s in body["services"] if s["role"] == "executor")
        assert executor["instances"] == [] and executor["needed"] is True
        assert (await api.get("/healthz")).status_code == 200  # the gateway itself lives


@pytest_asyncio.fixture
async def server(tmp_path: Path) -> AsyncIterator[tuple[EmbeddedNats, str, Path]]:
    home = tmp_path / "home"
    home.mkdir()
    credentials = home / "nats-credentials.json"
    nats = EmbeddedNats.secured(tmp_path / "nats", credentials, PREFIX)
    url = await nats.start()
    await prepare_streams(url, PREFIX, access.login_for(credentials, access.ADMIN))
    try:
        yield nats, url, home
    finally:
        await nats.stop()


async def test_status_command_when_nats_has_stopped_fails_fast_saying_what_to_start(
    server: tuple[EmbeddedNats, str, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    nats, url, home = server
    await nats.stop()
    monkeypatch.setenv("NATS_URL", url)
    monkeypatch.setenv("BLENDMESH_PREFIX", PREFIX)
    code, took = await asyncio.to_thread(status_command, home, "--json", "--timeout", "1")
    printed = json.loads(capsys.readouterr().out)
    assert code == 3 and took < 10
    assert printed["ready"] is False and printed["jetstream"]["ok"] is False
    reason = printed["reasons"][0]
    assert reason.startswith(f"cannot reach NATS at {url}") and "blendmesh up" in reason


async def test_gateway_when_its_nats_is_gone_healthz_and_readyz_answer_503_saying_so(
    server: tuple[EmbeddedNats, str, Path],
) -> None:
    nats, url, home = server
    credentials = home / "nats-credentials.json"
    bus = await Bus.open(url, PREFIX, "test-gateway", access.login_for(credentials, access.CLIENT))
    settings = Settings(home=home, prefix=PREFIX, user="ana", previews=False)
    app = create_app(settings, bus, Tokens({}))
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://gateway"
        ) as api:
            assert (await api.get("/healthz")).status_code == 200
            await nats.stop()
            for _ in range(100):
                if not bus.nc.is_connected:
                    break
                await asyncio.sleep(0.05)
            live = await api.get("/healthz")
            assert live.status_code == 503
            assert live.json() == {
                "live": False,
                "nats": "reconnecting",
                "reason": "the connection to NATS is reconnecting: the NATS server is down "
                "or unreachable",
            }
            ready = await api.get("/readyz")
            assert ready.status_code == 503
            body = ready.json()
            assert body["reasons"][0] == live.json()["reason"]
            assert body["jetstream"]["ok"] is False
    finally:
        await bus.close()


@pytest_asyncio.fixture
async def without_jetstream() -> AsyncIterator[str]:
    [port] = free_ports(1)
    proc = subprocess.Popen(
        [server_binary(), "-a", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield f"nats://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def test_snapshot_when_the_server_has_no_jetstream_says_jetstream_does_not_answer(
    without_jetstream: str,
) -> None:
    nc = await connect(without_jetstream, "test-status", None, wait=10)
    try:
        status = await health.snapshot(nc, nc.jetstream(timeout=1), PREFIX)
    finally:
        await nc.close()
    assert not status.ready and not status.jetstream.ok
    assert status.reasons[0] == (
        "JetStream does not answer: the NATS server has no JetStream, or it stopped"
    )
