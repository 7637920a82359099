"""A reverse proxy that adds a bearer token: for clients that cannot send one (the
official MCP conformance suite has no option for it) to reach ``/mcp`` as a user.

Every other header goes through as the client sent it, ``Host`` and ``Origin`` too, so
the gateway still judges them (its DNS-rebinding refusals are what a suite checks);
responses stream back as they come (SSE).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from services.doors.gateway.app import GatewayServer

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "upgrade"}


@asynccontextmanager
async def bearer_proxy(target: str, token: str) -> AsyncIterator[str]:
    """The URL of a proxy to ``target`` adding ``Authorization: Bearer token``."""
    client = httpx.AsyncClient(base_url=target, timeout=httpx.Timeout(30, read=300))

    async def forward(request: Request) -> StreamingResponse:
        headers = [
            (k, v)
            for k, v in request.headers.raw
            if k.decode("latin-1").lower() not in HOP_BY_HOP | {"authorization"}
        ]
        headers.append((b"authorization", f"Bearer {token}".encode()))
        sent = client.build_request(
            request.method, request.url.path, headers=headers, content=await request.body()
        )
        answer = await client.send(sent, stream=True)
        kept = {k: v for k, v in answer.headers.items() if k.lower() not in HOP_BY_HOP}
        return StreamingResponse(
            answer.aiter_raw(),
            status_code=answer.status_code,
            headers=kept,
            background=BackgroundTask(answer.aclose),
        )

    methods = ["GET", "POST", "DELETE", "PUT", "PATCH", "OPTIONS"]
    app = Starlette(routes=[Route("/{path:path}", forward, methods=methods)])
    server = GatewayServer(app, port=0)  # the gateway's embedded uvicorn, on a free port
    try:
        yield await server.start()
    finally:
        await server.stop()
        await client.aclose()
