"""The gateway's body limit runs before parsing and authentication (finding C).

``BodyLimit`` is plain ASGI, so it is tested here around a tiny app that records what
reached it; the gateway's own routes are tested on a real mesh in test_mesh_limits.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from starlette.types import Receive, Scope, Send

from services.doors.gateway.limits import BodyLimit

LIMIT = 1024


class Recorder:
    """An ASGI app that reads the whole body and answers how long it was."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.calls += 1
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": str(len(body)).encode()})


@pytest.fixture
def inner() -> Recorder:
    return Recorder()


@pytest.fixture
async def client(inner: Recorder) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=BodyLimit(inner, max_bytes=LIMIT))
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as c:
        yield c


async def chunks(total: int, size: int = 100) -> AsyncIterator[bytes]:
    for start in range(0, total, size):
        yield b"x" * min(size, total - start)


def assert_refused(response: httpx.Response) -> None:
    assert response.status_code == 413, response.text
    error = response.json()["error"]
    assert error["type"] == "ValidationError"
    assert "1024 bytes" in error["message"] and "BLENDMESH_MAX_BODY_BYTES" in error["message"]


async def test_body_limit_when_content_length_over_refuses_413_without_calling_app(
    client: httpx.AsyncClient, inner: Recorder
) -> None:
    response = await client.post("/api/agent/run", content=b"x" * (LIMIT + 1))
    assert_refused(response)
    assert inner.calls == 0


async def test_body_limit_when_chunked_body_over_refuses_413_without_calling_app(
    client: httpx.AsyncClient, inner: Recorder
) -> None:
    response = await client.post("/api/agent/run", content=chunks(LIMIT * 3))
    assert_refused(response)
    assert inner.calls == 0


async def test_body_limit_when_content_length_lies_counts_the_bytes(
    client: httpx.AsyncClient, inner: Recorder
) -> None:
    response = await client.post(
        "/api/agent/run", content=chunks(LIMIT * 3), headers={"Content-Length": "10"}
    )
    assert_refused(response)
    assert inner.calls == 0


@pytest.mark.parametrize("size", [0, 1, LIMIT])
async def test_body_limit_when_within_limit_passes_the_whole_body(
    client: httpx.AsyncClient, inner: Recorder, size: int
) -> None:
    response = await client.post("/api/agent/run", content=chunks(size, 7))
    assert response.status_code == 200 and response.text == str(size)
    assert inner.calls == 1


async def test_body_limit_when_get_without_body_passes(
    client: httpx.AsyncClient, inner: Recorder
) -> None:
    response = await client.get("/api/runs")
    assert response.status_code == 200 and response.text == "0"


async def test_body_limit_when_an_mcp_request_is_too_large_names_the_upload_route(
    client: httpx.AsyncClient, inner: Recorder
) -> None:
    # A 2.4 MB GLB sent to import_asset over /mcp was told to "send a shorter prompt".
    response = await client.post("/mcp", content=b"x" * (LIMIT + 1))
    assert_refused(response)
    message = response.json()["error"]["message"]
    assert "POST /api/uploads" in message and "shorter prompt" not in message
    assert inner.calls == 0
