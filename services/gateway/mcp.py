"""``/mcp``: the MCP front door over streamable HTTP, behind the same bearer tokens as /api.

The token's user is the MCP user: this wrapper authenticates every request, puts the user
in the ASGI scope for the server's tools, and binds each MCP session to that user so
another token cannot use it. The SDK's session manager needs a running task group; it
is started on the first request (uvicorn runs the gateway without a lifespan) and
stopped by ``close``.
"""

from __future__ import annotations

import asyncio
import contextlib

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.types import Receive, Scope, Send

from services.gateway.auth import Tokens
from services.gateway.errors import AuthError, error_response
from services.mcp.server import USER_KEY, authenticated_user, build_server, door_for
from services.runtime.host import Bus
from services.runtime.settings import Settings


class McpEndpoint:
    """An ASGI app: 401 without a valid bearer token, the MCP transport otherwise."""

    def __init__(self, settings: Settings, bus: Bus, tokens: Tokens, run_timeout: float) -> None:
        self._tokens = tokens
        server = build_server(door_for(settings, bus, run_timeout), authenticated_user)
        self._manager = StreamableHTTPSessionManager(server)
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._starting = asyncio.Lock()

    def _user(self, scope: Scope) -> str | None:
        headers = dict(scope.get("headers") or [])
        scheme, _, token = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        return self._tokens.user(token.strip())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        user = self._user(scope)
        if user is None:
            response = error_response(AuthError, 401, "send Authorization: Bearer <token>")
            await response(scope, receive, send)
            return
        # The session manager binds a session to the client_id that opened it.
        principal = AuthenticatedUser(AccessToken(token="bearer", client_id=user, scopes=[]))
        await self._started()
        await self._manager.handle_request(
            {**scope, "user": principal, USER_KEY: user}, receive, send
        )

    async def _started(self) -> None:
        async with self._starting:
            if self._task is not None:
                return
            ready = asyncio.Event()

            async def run() -> None:
                async with self._manager.run():
                    ready.set()
                    await self._stop.wait()

            self._task = asyncio.create_task(run())
            await ready.wait()

    async def close(self) -> None:
        if self._task is None:
            return
        self._stop.set()
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await asyncio.wait_for(self._task, 10)
        self._task = None
