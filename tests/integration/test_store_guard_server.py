"""What the store guard asks of the embedded nats-server (real nats-server): a restart
keeps its port, its store and its clients, and is no end; a reload raises its limit."""

from __future__ import annotations

import asyncio
from pathlib import Path

import nats
import pytest
from nats.js.errors import APIError

from services.runtime.server.embedded import EmbeddedNats, EmbeddedServerError
from services.runtime.server.store_guard import REFUSING
from services.runtime.service.store_limits import MIB, StoreLimits, store_full

pytestmark = pytest.mark.integration


async def test_server_when_restarted_refusing_keeps_data_and_clients_then_raised_takes_writes(
    tmp_path: Path,
) -> None:
    server = EmbeddedNats(tmp_path / "store", limits=StoreLimits(file_store=16 * MIB))
    url = await server.start()
    nc = await nats.connect(url, max_reconnect_attempts=-1, reconnect_time_wait=0.1)
    try:
        js = nc.jetstream(timeout=5)
        await js.add_stream(name="KEPT", subjects=["kept.>"])
        acked = await js.publish("kept.one", b"acknowledged")
        ended = asyncio.ensure_future(server.exited())
        await asyncio.sleep(0.05)  # it waits on the server that runs now

        assert await server.restart(REFUSING) == url  # same port: clients come back
        assert not ended.done()  # a restart is no end
        with pytest.raises(APIError) as refused:
            await js.publish("kept.two", b"no room")
        assert store_full(refused.value), refused.value
        assert (await js.get_msg("KEPT", acked.seq)).data == b"acknowledged"

        await server.raise_limits(StoreLimits(file_store=16 * MIB))  # taken once returned
        assert (await js.publish("kept.two", b"room")).seq == acked.seq + 1
        ended.cancel()
    finally:
        await nc.close()
        await server.stop()


async def test_server_when_a_limit_is_lowered_by_reload_says_it_was_not_taken(
    tmp_path: Path,
) -> None:
    server = EmbeddedNats(tmp_path / "store", limits=StoreLimits(file_store=16 * MIB))
    await server.start()
    try:
        with pytest.raises(EmbeddedServerError, match=r"did not take its new store limit.*decreas"):
            await server.raise_limits(StoreLimits(file_store=8 * MIB))
    finally:
        await server.stop()


async def test_server_when_not_running_refuses_restart_and_raise(tmp_path: Path) -> None:
    server = EmbeddedNats(tmp_path / "store")
    with pytest.raises(EmbeddedServerError, match="not running"):
        await server.restart(REFUSING)
    with pytest.raises(EmbeddedServerError, match="not running"):
        await server.raise_limits(StoreLimits(file_store=16 * MIB))


async def test_server_when_killed_after_a_restart_is_said_to_have_exited(tmp_path: Path) -> None:
    server = EmbeddedNats(tmp_path / "store")
    await server.start()
    try:
        ended = asyncio.ensure_future(server.exited())  # first looks while it restarts
        await server.restart(None)
        assert server.pid is not None and server._proc is not None
        server._proc.kill()
        said = await asyncio.wait_for(ended, 10)
        assert f"nats-server {server.pid} exited" in said
    finally:
        await server.stop()
