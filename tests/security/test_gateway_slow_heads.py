"""Connections that never finish their request's head are closed; real requests are not.

Measured before: 800 connections that each sent half a header were all held 30 s and
more. Driven with raw sockets against the gateway's own uvicorn server, on loopback.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from fastapi import FastAPI

from services.doors.gateway.app import GatewayServer

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(60)]
HEAD_SECONDS = 0.5
SLOW_ANSWER = 1.5  # longer than the head's deadline: an answer is not timed


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server() -> AsyncIterator[GatewayServer]:
    app = FastAPI()

    @app.get("/slow")
    async def slow() -> dict[str, bool]:
        await asyncio.sleep(SLOW_ANSWER)
        return {"ok": True}

    running = GatewayServer(app, port=0, header_seconds=HEAD_SECONDS)
    await running.start()
    yield running
    await running.stop()


def _port(server: GatewayServer) -> int:
    return int(server.url.rsplit(":", 1)[1])


async def _closed_by_server(reader: asyncio.StreamReader, within: float) -> bool:
    try:
        return await asyncio.wait_for(reader.read(1024), within) == b""
    except (TimeoutError, ConnectionError):
        return False


async def test_half_sent_heads_are_closed_after_the_deadline(server: GatewayServer) -> None:
    opened = [await asyncio.open_connection("127.0.0.1", _port(server)) for _ in range(200)]
    for _, writer in opened:
        writer.write(b"GET /slow HTTP/1.1\r\nHost: gateway\r\nX-Slow: ")
        await writer.drain()
    closed = await asyncio.gather(
        *(_closed_by_server(reader, HEAD_SECONDS + 5) for reader, _ in opened)
    )
    for _, writer in opened:
        writer.close()
    assert all(closed), f"{closed.count(False)} of {len(closed)} were still open"


async def test_a_silent_connection_is_closed_too(server: GatewayServer) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", _port(server))
    assert await _closed_by_server(reader, HEAD_SECONDS + 5)
    writer.close()


async def test_a_request_whose_answer_takes_longer_than_the_deadline_is_answered(
    server: GatewayServer,
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", _port(server))
    writer.write(b"GET /slow HTTP/1.1\r\nHost: gateway\r\nConnection: close\r\n\r\n")
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), SLOW_ANSWER + 10)
    writer.close()
    assert answer.startswith(b"HTTP/1.1 200") and b'{"ok":true}' in answer


async def test_a_kept_alive_connection_gets_a_deadline_for_its_next_head(
    server: GatewayServer,
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", _port(server))
    writer.write(b"GET /slow HTTP/1.1\r\nHost: gateway\r\n\r\n")
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), SLOW_ANSWER + 10)
    assert head.startswith(b"HTTP/1.1 200")
    await reader.readexactly(int(head.split(b"content-length: ")[1].split(b"\r\n")[0]))
    writer.write(b"GET /slow HTTP/1.1\r\nHo")  # the next request, never finished
    await writer.drain()
    assert await _closed_by_server(reader, HEAD_SECONDS + 5)
    writer.close()
