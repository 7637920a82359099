"""Registering on the NATS services API against a real nats-server: what an instance
answers, when it does not, and what its STATS say when reading its own state fails."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from nats.aio.msg import Msg

from services.runtime.server.embedded import EmbeddedNats
from services.runtime.service import health
from services.runtime.service.host import Bus

pytestmark = pytest.mark.integration

ROLE = "planner"


async def test_register_when_asked_info_and_stats_answers_with_name_version_and_metadata(
    bus: Bus,
) -> None:
    async def stats() -> dict[str, Any]:
        return {"consumers": [{"durable": "planner", "num_pending": 3}]}

    registered = await health.register(bus, ROLE, stats)
    try:
        info = await bus.nc.request("$SRV.INFO.blendmesh-planner", b"", timeout=2)
        described = json.loads(info.data)
        assert described["name"] == "blendmesh-planner" and described["id"] == registered.id
        assert described["version"] == health.VERSION
        assert described["metadata"] == {"role": ROLE, "prefix": bus.prefix}
        [found] = await health.stats(bus.nc, ROLE)
        assert found.data.consumers[0].num_pending == 3 and found.data.problems == []
    finally:
        await registered.stop()
    assert await health.ping(bus.nc, ROLE) == []  # stopped: no answer


async def test_stats_when_reading_its_state_fails_or_is_slow_report_it_as_a_problem(
    bus: Bus,
) -> None:
    async def broken() -> dict[str, Any]:
        raise RuntimeError("secret detail")

    async def slow() -> dict[str, Any]:
        await asyncio.sleep(5)
        return {}

    first = await health.register(bus, "policy", broken)
    second = await health.register(bus, "audit", slow)
    try:
        [failed] = await health.stats(bus.nc, "policy")
        assert failed.data.problems == ["it could not read its state (RuntimeError)"]
        [late] = await health.stats(bus.nc, "audit", wait=2.0)
        assert late.data.problems == [
            f"it could not read its state within {health.STATS_WITHIN:g} s"
        ]
    finally:
        await first.stop()
        await second.stop()


async def test_register_when_a_request_names_a_reply_outside_an_inbox_does_not_answer(
    bus: Bus,
) -> None:
    registered = await health.register(bus, ROLE)
    heard: list[str] = []

    async def hear(msg: Msg) -> None:
        heard.append(msg.subject)

    try:
        await bus.nc.subscribe("bmtest.run.forged.>", cb=hear)
        await bus.nc.subscribe("_INBOX.honest", cb=hear)
        for verb in ("PING", "INFO", "STATS"):
            await bus.nc.publish(
                f"$SRV.{verb}.blendmesh-planner", b"", reply=f"bmtest.run.forged.{verb}"
            )
        await bus.nc.publish(
            "$SRV.PING", b"", reply="_INBOX.honest", headers={"Nats-Stream": "X"}
        )  # as a stream would deliver it
        await bus.nc.publish("$SRV.PING.blendmesh-planner", b"", reply="_INBOX.honest")
        await bus.nc.flush()
        await asyncio.sleep(0.5)
        assert heard == ["_INBOX.honest"]  # the honest question alone
    finally:
        await registered.stop()


async def test_ping_when_meshes_share_a_server_or_others_answer_keeps_its_mesh_only(
    bus: Bus,
) -> None:
    ours = await health.register(bus, ROLE)
    other = Bus(nc=bus.nc, js=bus.js, publisher=bus.publisher, prefix="othermesh")
    theirs = await health.register(other, ROLE)

    async def garbage(msg: Msg) -> None:
        await msg.respond(b"not json")

    await bus.nc.subscribe("$SRV.PING.blendmesh-planner", cb=garbage)
    try:
        assert [p.id for p in await health.ping(bus.nc, ROLE, prefix=bus.prefix)] == [ours.id]
        everyone = await health.ping(bus.nc, ROLE)
        assert {p.id for p in everyone} == {ours.id, theirs.id}  # the garbage is dropped
    finally:
        await ours.stop()
        await theirs.stop()


async def test_registration_when_its_server_dies_stops_within_its_bound(tmp_path: Path) -> None:
    server = EmbeddedNats(tmp_path / "nats")
    gone = await Bus.open(await server.start(), "bmtest", "test-gone")
    try:
        registered = await health.register(gone, ROLE)
        assert server.pid is not None
        os.kill(server.pid, signal.SIGKILL)  # the client has not noticed yet
        loop = asyncio.get_running_loop()
        started = loop.time()
        await registered.stop()  # nats.micro alone waits 10 s per subscription for a PONG
        assert loop.time() - started < health.STOP_WITHIN + 1
    finally:
        await gone.close()
        await server.stop()
