"""``/mcp``: the MCP front door over streamable HTTP, behind the same bearer tokens as /api.

A request without a token, or with one refused, is 401 with the challenge that names the
protected-resource metadata when OAuth is on (the MCP authorization spec's discovery).

The token's user is the MCP user: this wrapper authenticates every request, puts the user
in the ASGI scope for the server's tools, and binds each MCP session to that user so
another token cannot use it. The SDK's session manager needs a running task group; it
is started on the first request (uvicorn runs the gateway without a lifespan) and
stopped by ``close``.

DNS rebinding (the MCP spec's MUST): a request whose ``Host`` is not the address the
gateway serves on, or one of its loopback names at that port, is 421; one whose
``Origin`` is not such an address is 403. BLENDMESH_MCP_ALLOWED_HOSTS and
BLENDMESH_MCP_ALLOWED_ORIGINS add the names a proxy or a browser page uses. Until
``served_at`` names the address, only those added are allowed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Mapping
from urllib.parse import urlsplit

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.shared.version import SUPPORTED_PROTOCOL_VERSIONS as HANDSHAKE_VERSIONS
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from contracts.session import MCP_HTTP
from services.doors.gateway.auth import Authenticator
from services.doors.gateway.errors import (
    ApiError,
    AuthError,
    BadRequest,
    error_response,
    status_of,
)
from services.doors.mcp.envelope import http_status
from services.doors.mcp.modern import Modern
from services.doors.mcp.server import USER_KEY, authenticated_user, build_server, door_for
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings, SettingsError

log = logging.getLogger("blendmesh.gateway")
HOSTS_VAR = "BLENDMESH_MCP_ALLOWED_HOSTS"
ORIGINS_VAR = "BLENDMESH_MCP_ALLOWED_ORIGINS"
LOOPBACK = ("localhost", "127.0.0.1", "[::1]")


def _listed(env: Mapping[str, str], name: str) -> list[str]:
    return [entry.strip() for entry in env.get(name, "").split(",") if entry.strip()]


def extra_hosts(env: Mapping[str, str]) -> list[str]:
    """BLENDMESH_MCP_ALLOWED_HOSTS: ``Host`` values as clients send them (``name``,
    ``name:port``, or ``name:*`` for any port), comma separated."""
    hosts = _listed(env, HOSTS_VAR)
    for host in hosts:
        if "/" in host or any(c.isspace() for c in host):
            raise SettingsError(
                f"{HOSTS_VAR} holds {host!r}, which is not a host; give host or host:port "
                "as a client sends it in Host (e.g. blend.example.com:8443), comma separated"
            )
    return hosts


def extra_origins(env: Mapping[str, str]) -> list[str]:
    """BLENDMESH_MCP_ALLOWED_ORIGINS: browser origins (``scheme://host[:port]``, or
    ``scheme://host:*`` for any port), comma separated."""
    origins = _listed(env, ORIGINS_VAR)
    for origin in origins:
        parts = urlsplit(origin)
        if (
            parts.scheme not in ("http", "https")
            or not parts.netloc
            or origin != (f"{parts.scheme}://{parts.netloc}")
        ):
            raise SettingsError(
                f"{ORIGINS_VAR} holds {origin!r}, which is not an origin; give "
                "scheme://host[:port] as a browser sends it in Origin (e.g. "
                "https://blend.example.com), comma separated"
            )
    return origins


def served(host: str, port: int) -> tuple[list[str], list[str]]:
    """The ``Host`` values and origins of the gateway's own address and its loopback names."""
    own = f"[{host}]" if ":" in host and not host.startswith("[") else host
    names = list(dict.fromkeys([own, *LOOPBACK]))
    return [f"{n}:{port}" for n in names], [f"http://{n}:{port}" for n in names]


def _headers(scope: Scope) -> dict[str, str]:
    return {
        bytes(k).decode("latin-1").lower(): bytes(v).decode("latin-1").strip()
        for k, v in scope.get("headers") or []
    }


def _modern(headers: dict[str, str]) -> bool:
    """Whether the request is not for the 1.x SDK's transport: its MCP-Protocol-Version
    is 2026-07-28, or a version no revision of the handshake era has (which the modern
    server answers with the versions it does speak)."""
    version = headers.get("mcp-protocol-version")
    return version is not None and version not in HANDSHAKE_VERSIONS


async def _hung_up(receive: Receive) -> None:
    """Until the client closes its request (its body has been read already)."""
    while (await receive())["type"] != "http.disconnect":
        pass


class McpEndpoint:
    """An ASGI app: 421/403 for a foreign Host/Origin, 401 without a valid bearer token,
    the MCP transport otherwise."""

    def __init__(
        self, settings: Settings, bus: Bus, auth: Authenticator, run_timeout: float
    ) -> None:
        self._auth = auth
        self._extra = (extra_hosts(settings.env), extra_origins(settings.env))
        self._allowed = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=list(self._extra[0]),
            allowed_origins=list(self._extra[1]),
        )
        self._guard = TransportSecurityMiddleware(self._allowed)
        door = door_for(settings, bus, run_timeout, MCP_HTTP)
        server = build_server(door, authenticated_user)
        self._modern = Modern(door)  # 2026-07-28 requests: one POST, one answer, no session
        self._manager = StreamableHTTPSessionManager(server, security_settings=self._allowed)
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._starting = asyncio.Lock()

    def served_at(self, host: str, port: int) -> None:
        """Allow the address the gateway listens on, once it is bound (port 0 picks one)."""
        hosts, origins = served(host, port)
        self._allowed.allowed_hosts = [*hosts, *self._extra[0]]
        self._allowed.allowed_origins = [*origins, *self._extra[1]]

    async def _user(self, scope: Scope) -> str | ApiError:
        headers = dict(scope.get("headers") or [])
        try:
            return await self._auth.header_user(
                headers.get(b"authorization", b"").decode("latin-1")
            )
        except ApiError as exc:
            return exc

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        # Before the token: a page rebound to this address learns nothing, not even that
        # a token is wanted. (The transport checks again, with the same settings.)
        refused = await self._guard.validate_request(HTTPConnection(scope))
        if refused is not None:
            await refused(scope, receive, send)
            return
        user = await self._user(scope)
        if isinstance(user, ApiError):
            kind = type(user)
            challenge = self._auth.challenge(kind) if isinstance(user, AuthError) else None
            response = error_response(kind, status_of(user), str(user), challenge)
            await response(scope, receive, send)
            return
        if _modern(_headers(scope)):
            await self._answer_modern(user, scope, receive, send)
            return
        # The session manager binds a session to the client_id that opened it.
        principal = AuthenticatedUser(AccessToken(token="bearer", client_id=user, scopes=[]))
        await self._started()
        await self._manager.handle_request(
            {**scope, "user": principal, USER_KEY: user}, receive, send
        )

    async def _answer_modern(self, user: str, scope: Scope, receive: Receive, send: Send) -> None:
        """A 2026-07-28 request: a POST of one JSON-RPC message, answered in JSON."""
        request = Request(scope, receive)
        if request.method != "POST":
            response: Response = error_response(
                BadRequest, 405, "MCP 2026-07-28 takes one JSON-RPC request per POST"
            )
            await response(scope, receive, send)
            return
        try:
            message = json.loads(await request.body())
        except ValueError:
            parse = {"code": -32700, "message": "the body is not JSON; send one JSON-RPC request"}
            await JSONResponse({"jsonrpc": "2.0", "id": None, "error": parse}, 400)(
                scope, receive, send
            )
            return
        console = str(request.base_url).rstrip("/")  # where a URL-mode approval sends people
        answering = asyncio.create_task(
            self._modern.answer(user, message, _headers(scope), console)
        )
        leaving = asyncio.create_task(_hung_up(receive))
        await asyncio.wait({answering, leaving}, return_when=asyncio.FIRST_COMPLETED)
        leaving.cancel()
        if not answering.done():
            # The revision's cancellation on HTTP: the client closed its request. The call
            # stops waiting; a run it started goes on (cancel_run stops runs).
            answering.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await answering
            log.info("an MCP 2026-07-28 request ended unanswered: its client hung up")
            return
        answer = answering.result()
        status = http_status(answer)
        response = Response(status_code=202) if answer is None else JSONResponse(answer, status)
        await response(scope, receive, send)

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
