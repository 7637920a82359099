"""A warm hold (ADR 0037) on a real mesh ends when its scene leaves the Blender: when the
Blender is stopped for idling (ADR 0033), and at once when the executor stops, so other
executors never wait out the lease ttl for a scene nobody holds loaded."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import msgspec
import pytest

from services.doors.cli.mesh import Mesh
from services.doors.core.client import MeshClient
from services.doors.core.requests import build_request
from services.executor.domain.ports import Lease
from services.runtime.nats.streams import ensure_kv
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings

pytestmark = pytest.mark.timeout(240)

PREFIX = "bmwarmrel"
IDLE = 2.0  # seconds before the executor's Blender is stopped
TTL = 1.5  # the hold is renewed, and the Blender checked, every half second


async def lease(bus: Bus, scene: str) -> Lease:
    kv = await ensure_kv(bus.js, PREFIX, "leases")
    return msgspec.json.decode((await kv.get(scene)).value or b"", type=Lease)


async def run_on(mesh_settings: Settings, scene: str) -> tuple[Mesh, Bus]:
    mesh = Mesh(mesh_settings)
    await mesh.start()
    bus = await Bus.open(mesh.url, PREFIX, "test")
    request = build_request(user="ana", scene_id=scene, prompt="add a cube named Box")
    result = await MeshClient(bus).run(request, timeout=120)
    assert result.status == "completed", result.message
    return mesh, bus


def settings(tmp_path: Path, nats_url: str, **changes: object) -> Settings:
    return Settings(
        home=tmp_path / "home",
        nats_url=nats_url,
        prefix=PREFIX,
        user="ana",
        lease_ttl=TTL,
        warm_hold=60.0,
        previews=False,
    ).with_(**changes)


async def test_warm_hold_when_the_blender_is_stopped_for_idling_is_released(
    tmp_path: Path, nats_url: str
) -> None:
    mesh, bus = await run_on(settings(tmp_path, nats_url, bridge_idle=IDLE), "idle")
    try:
        held = await lease(bus, "idle")
        assert held.idle and held.expires_at > time.time()
        await asyncio.sleep(IDLE / 2)
        assert (await lease(bus, "idle")).expires_at > time.time()  # the window is 60 s
        deadline = time.monotonic() + IDLE + 10 * TTL
        while (await lease(bus, "idle")).expires_at != 0.0:
            assert time.monotonic() < deadline, "the hold outlived its Blender"
            await asyncio.sleep(0.1)
    finally:
        await bus.close()
        await mesh.stop()


async def test_warm_hold_when_the_executor_stops_is_released_at_once(
    tmp_path: Path, nats_url: str
) -> None:
    mesh, bus = await run_on(settings(tmp_path, nats_url, lease_ttl=60.0), "stop")
    try:
        held = await lease(bus, "stop")
        assert held.idle and held.expires_at > time.time() + 30
        await mesh.stop()
        assert (await lease(bus, "stop")).expires_at == 0.0
    finally:
        await bus.close()
        await mesh.stop()
