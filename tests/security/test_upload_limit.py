"""The import route's exemption from the body limit is explicit and bounded: only its
method and path stream past the JSON limit, up to a limit of their own, refused by
Content-Length up front or counted while the body arrives.

``BodyLimit`` is plain ASGI, so it is tested around a tiny app that records what reached
it; the gateway's own import route is tested on a real mesh in test_gateway_scenes.py.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import httpx
import pytest
from starlette.types import Receive, Scope, Send

from services.doors.gateway.errors import TooLarge
from services.doors.gateway.limits import BodyLimit, Streamed

LIMIT = 1024
UPLOADS = 8 * LIMIT
IMPORT = "/api/scenes/s1/import"


class Recorder:
    """An ASGI app that reads the body and answers how long it was and in how many parts."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.calls += 1
        size, parts, more = 0, 0, True
        while more:
            message = await receive()
            size += len(message.get("body", b""))
            parts += 1
            more = message.get("more_body", False)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": f"{size} {parts}".encode()})


@pytest.fixture
def inner() -> Recorder:
    return Recorder()


@pytest.fixture
async def client(inner: Recorder) -> AsyncIterator[httpx.AsyncClient]:
    upload = Streamed(
        method="POST",
        path=re.compile(r"/api/scenes/[a-z0-9]+/import"),
        max_bytes=UPLOADS,
        setting="BLENDMESH_MAX_UPLOAD_BYTES",
        what="the .blend to import",
    )
    app = BodyLimit(inner, max_bytes=LIMIT, streamed=[upload])
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as c:
        yield c


async def chunks(total: int, size: int = 500) -> AsyncIterator[bytes]:
    for start in range(0, total, size):
        yield b"x" * min(size, total - start)


async def test_upload_when_within_its_limit_streams_to_the_app_unbuffered(
    client: httpx.AsyncClient,
) -> None:
    response = await client.post(IMPORT, content=chunks(UPLOADS))
    assert response.status_code == 200, response.text
    size, parts = map(int, response.text.split())
    assert size == UPLOADS and parts > 1  # handed on as it came, not held and replayed


async def test_upload_when_content_length_over_refuses_413_without_calling_app(
    client: httpx.AsyncClient, inner: Recorder
) -> None:
    response = await client.post(IMPORT, content=b"x" * (UPLOADS + 1))
    assert response.status_code == 413, response.text
    error = response.json()["error"]
    assert error["type"] == "ValidationError"
    assert f"{UPLOADS} bytes" in error["message"]
    assert "BLENDMESH_MAX_UPLOAD_BYTES" in error["message"]
    assert inner.calls == 0


async def test_upload_when_chunked_body_passes_its_limit_raises_too_large_while_reading(
    client: httpx.AsyncClient,
) -> None:
    # The gateway's error table answers this 413 (test_gateway_scenes.py); bare, it raises.
    with pytest.raises(TooLarge, match="BLENDMESH_MAX_UPLOAD_BYTES"):
        await client.post(IMPORT, content=chunks(UPLOADS + 1))


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/api/agent/run"),
        ("PUT", IMPORT),
        ("POST", IMPORT + "/again"),
        ("POST", "/api/scenes/s1/import.json"),
    ],
)
async def test_other_routes_when_over_the_json_limit_are_still_refused(
    client: httpx.AsyncClient, inner: Recorder, method: str, path: str
) -> None:
    response = await client.request(method, path, content=b"x" * (LIMIT + 1))
    assert response.status_code == 413, response.text
    assert "BLENDMESH_MAX_BODY_BYTES" in response.json()["error"]["message"]
    assert inner.calls == 0
