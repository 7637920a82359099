"""``blendmesh up`` hears when JetStream stops under it (nats-server disables it when its
disk fills), rather than run on while every request times out. Real nats-servers: one that
is frozen mid-watch, and one that never had JetStream."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import nats
import pytest

from services.runtime.server.embedded import EmbeddedNats, server_binary
from services.runtime.server.jetstream_watch import stopped, write_failed

pytestmark = pytest.mark.integration

FAST = {"interval": 0.2, "misses": 3}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def no_jetstream() -> Iterator[str]:
    """A nats-server started without -js: JetStream answers nothing there."""
    port = free_port()
    proc = subprocess.Popen(
        [server_binary(), "-a", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield f"nats://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


async def test_watch_when_jetstream_answers_never_returns(nats_url: str) -> None:
    nc = await nats.connect(nats_url)
    try:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(stopped(nc.jetstream(), **FAST), 2.0)
    finally:
        await nc.close()


async def test_watch_when_server_has_no_jetstream_says_it_stopped(no_jetstream: str) -> None:
    for _ in range(50):  # the server needs a moment to listen
        try:
            nc = await nats.connect(no_jetstream, allow_reconnect=False)
            break
        except (OSError, nats.errors.NoServersError):
            await asyncio.sleep(0.1)
    try:
        said = await asyncio.wait_for(stopped(nc.jetstream(), **FAST), 10)
    finally:
        await nc.close()
    assert "JetStream stopped answering" in said and "disk is full" in said


async def test_watch_when_server_freezes_mid_watch_says_it_stopped(tmp_path: Path) -> None:
    async with EmbeddedNats(tmp_path / "store") as server:
        nc = await nats.connect(server.url)
        watch = asyncio.ensure_future(stopped(nc.jetstream(), **FAST))
        try:
            await asyncio.sleep(1.0)
            assert not watch.done()  # answering: nothing to say
            assert server.pid is not None
            os.kill(server.pid, signal.SIGSTOP)
            try:
                said = await asyncio.wait_for(watch, 10)
            finally:
                os.kill(server.pid, signal.SIGCONT)
        finally:
            watch.cancel()
            await nc.close()
    assert "JetStream stopped answering" in said


async def test_write_watch_when_server_logs_a_failed_write_quotes_it(tmp_path: Path) -> None:
    """The line nats-server 2.12 writes when a store hits a full disk (seen on a 120 MiB
    tmpfs); lines written before the watch began are not news."""
    log = tmp_path / "nats.log"
    log.write_text("[1] 2026/11/24 15:00:00.0 [ERR] old critical write error: earlier\n")
    watch = asyncio.ensure_future(write_failed(log, interval=0.05))
    await asyncio.sleep(0.3)
    assert not watch.done()
    with log.open("a") as out:
        out.write("[1] 2026/11/24 15:03:15.3 [INF] fine\n[1] 2026/11/24 15:03:15.4 [ERR] ")
        out.flush()
        await asyncio.sleep(0.2)
        out.write(
            "Filestore [KV_blendmesh_journal] Critical write error: write .../1.blk: "
            "no space left on device\n"
        )
    said = await asyncio.wait_for(watch, 5)
    assert "JetStream could not write (Filestore [KV_blendmesh_journal] Critical" in said
    assert "no space left on device" in said and "earlier" not in said
