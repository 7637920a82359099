"""A command pointed at a mesh that is not there says so at once, not after a service's
patience: a person at a prompt is waiting."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from asyncio import StreamReader, StreamWriter
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from services.doors.cli.common import CLI_CONNECT_WAIT, CLI_READY_WAIT, EXIT_MESH, connected
from services.doors.cli.main import main
from services.runtime.nats.bus import JetStreamUnavailable
from services.runtime.service.settings import Settings

pytestmark = pytest.mark.integration


def closed_port() -> int:
    with socket.socket() as s:  # bound, then closed: nothing listens there
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_command_when_nats_url_has_no_server_fails_within_its_short_wait(
    tmp_path: Path,
) -> None:
    settings = Settings(home=tmp_path, nats_url=f"nats://127.0.0.1:{closed_port()}")
    started = time.monotonic()
    with pytest.raises(ConnectionError, match=r"cannot reach NATS .* fix NATS_URL"):
        async with connected(settings, ()):
            pass
    assert time.monotonic() - started < CLI_CONNECT_WAIT + 1.5


@asynccontextmanager
async def listening(handle: Callable[[StreamReader, StreamWriter], Awaitable[None]]) -> Any:
    """A TCP server on a free port that talks as ``handle`` says; yields its NATS URL."""
    writers: list[StreamWriter] = []

    async def keep(reader: StreamReader, writer: StreamWriter) -> None:
        writers.append(writer)
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            await handle(reader, writer)

    server = await asyncio.start_server(keep, "127.0.0.1", 0)
    try:
        yield f"nats://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()
        for writer in writers:
            writer.close()


async def says_nothing(reader: StreamReader, writer: StreamWriter) -> None:
    """Accepts the connection and never sends NATS's hello: a port reused by another
    program, or a proxy whose backend is gone."""
    await reader.read()


async def nats_without_answers(reader: StreamReader, writer: StreamWriter) -> None:
    """Speaks NATS (hello, PONG) but never answers a request: JetStream there has stopped,
    as nats-server stops it on a full disk, or a cluster has no leader."""
    info = {"server_id": "mute", "version": "2.10.0", "proto": 1, "headers": True}
    writer.write(f"INFO {json.dumps(info)}\r\n".encode())
    while line := await reader.readline():
        if line.startswith(b"PING"):
            writer.write(b"PONG\r\n")
        elif line.startswith((b"PUB", b"HPUB")):
            await reader.readexactly(int(line.split()[-1]) + 2)


async def test_command_when_nats_url_accepts_and_says_nothing_fails_within_its_short_wait(
    tmp_path: Path,
) -> None:
    async with listening(says_nothing) as url:
        settings = Settings(home=tmp_path, nats_url=url)
        started = time.monotonic()
        with pytest.raises(ConnectionError, match=r"cannot reach NATS .*\(no answer\).* NATS_URL"):
            async with connected(settings, ()):
                pass
        assert time.monotonic() - started < CLI_CONNECT_WAIT + 1.5


async def test_command_when_jetstream_never_answers_fails_within_seconds_naming_storage(
    tmp_path: Path,
) -> None:
    async with listening(nats_without_answers) as url:
        settings = Settings(home=tmp_path, nats_url=url)
        started = time.monotonic()
        with pytest.raises(
            JetStreamUnavailable, match=r"JetStream did not within .* store is full"
        ):
            async with connected(settings, ()):
                pass
        assert time.monotonic() - started < CLI_CONNECT_WAIT + CLI_READY_WAIT + 1.5


def test_cli_when_jetstream_never_answers_prints_one_line_and_exits_4(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async def serve_and_run() -> int:
        async with listening(nats_without_answers) as url:
            monkeypatch.setenv("NATS_URL", url)
            return await asyncio.to_thread(main, ["--home", str(tmp_path), "runs"])

    assert asyncio.run(serve_and_run()) == EXIT_MESH
    said = capsys.readouterr().err
    assert "Traceback" not in said
    assert said.count("blendmesh: ") == 1 and "JetStream did not within" in said
