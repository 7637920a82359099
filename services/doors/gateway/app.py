"""Composition root of the gateway: ``create_app(settings, bus)`` and serving it.

The gateway never talks to a service directly: it publishes requests and resolutions
through ``MeshClient``, follows runs in the log, and asks the audit service for views.
``blendmesh up`` serves it inside the mesh's own asyncio loop (``GatewayServer``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import Generator
from pathlib import Path

import uvicorn
from fastapi import Depends, FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from services.doors.core.client import MeshClient
from services.doors.core.fairness import Fairness, Limits
from services.doors.core.quota import RunQuota
from services.doors.gateway import (
    agent,
    approvals,
    cancels,
    changes,
    errors,
    health,
    me,
    metrics,
    projects,
    protected_resource,
    pushed_chunks,
    reads,
    renders,
    scene_exports,
    scene_libraries,
    scene_looks,
    scene_runs,
    scene_tags,
    scenes,
    steer,
    tools,
    uploads,
)
from services.doors.gateway.auth import Authenticator, Tokens
from services.doors.gateway.context import Gateway
from services.doors.gateway.fair_share import FairShare
from services.doors.gateway.limits import BodyLimit
from services.doors.gateway.mcp import McpEndpoint
from services.doors.gateway.oauth.keys import FetchJson
from services.doors.gateway.oauth.settings import oauth_settings
from services.doors.gateway.oauth.verifier import OAuthVerifier
from services.doors.gateway.protocol import HEADER_SECONDS, HeadTimedH11
from services.doors.gateway.query import known_query
from services.runtime.service.host import Bus, never
from services.runtime.service.owners import LogOwners
from services.runtime.service.settings import Settings, SettingsError

STATIC = Path(__file__).parent / "static"
DEFAULT_PORT = 8000
IDLE_SECONDS = 5  # a kept-alive connection with no request
MAX_CONNECTIONS = 1024
log = logging.getLogger("blendmesh.gateway")


def create_app(
    settings: Settings,
    bus: Bus,
    tokens: Tokens | None = None,
    *,
    run_timeout: float = 600.0,
    static: Path = STATIC,
    fetch: FetchJson | None = None,
) -> FastAPI:
    """The gateway over ``bus``; tokens default to BLENDMESH_API_TOKENS(_FILE), and
    access tokens of BLENDMESH_OAUTH_ISSUER count too when it is set in ``settings.env``
    (their keys fetched over HTTP, or by ``fetch``)."""
    app = FastAPI(
        title="blendmesh",
        version="0.1.0",
        description="Change a Blender scene safely through the blendmesh mesh (docs/http-api.md).",
        dependencies=[Depends(known_query)],
        # Every route, behind the user's share (fair_share.py).
        responses=errors.responses(429),
    )
    app.state.tokens = tokens if tokens is not None else Tokens.from_env(os.environ)
    rules = oauth_settings(settings.env)
    verifier = OAuthVerifier(rules, fetch) if rules is not None else None
    app.state.auth = Authenticator(app.state.tokens, verifier)
    app.state.gateway = Gateway(
        settings=settings,
        bus=bus,
        client=MeshClient(bus, quota=RunQuota.from_env(settings.env)),
        owners=LogOwners(bus),
        run_timeout=run_timeout,
    )
    errors.install(app)
    # Outside routing, parsing and authentication: an unauthenticated client is held to
    # the limit too. The import routes alone take a larger body, streamed (scene_runs,
    # scene_looks).
    fairness = Fairness(Limits.from_env(settings.env), time.monotonic)
    app.add_middleware(FairShare, auth=lambda: app.state.auth, fairness=fairness)
    app.add_middleware(
        BodyLimit,
        max_bytes=settings.max_body_bytes,
        streamed=[
            scene_runs.upload_limit(settings),
            scene_looks.asset_limit(settings),
            uploads.upload_limit(settings),
            pushed_chunks.batch_limit(),
        ],
    )
    routers = (
        *(agent, approvals, cancels, me, reads, scenes, scene_runs, scene_looks, scene_tags),
        steer,
        *(uploads, pushed_chunks, changes, scene_exports, projects, tools, renders),
        scene_libraries,
        *(health, metrics, protected_resource),
    )
    for module in routers:
        # /metrics, like /readyz and the OAuth metadata, takes no API token
        app.include_router(module.router)
    app.state.readiness = health.ReadinessProbe(bus)  # /readyz, without a token
    # The MCP front door, as the token's user (services/doors/mcp).
    app.state.mcp = McpEndpoint(settings, bus, app.state.auth, run_timeout)
    app.add_route("/mcp", app.state.mcp, include_in_schema=False)
    if static.is_dir():  # the web console, when it is there
        app.mount("/static", StaticFiles(directory=static), name="static")

        @app.get("/", include_in_schema=False)
        async def console() -> FileResponse:
            index = static / "index.html"
            if not index.is_file():
                raise errors.NotFound("no web console is installed")
            return FileResponse(index)

    return app


class _EmbeddedServer(uvicorn.Server):
    """uvicorn inside the mesh's process: signals belong to ``blendmesh up``, which stops
    the gateway and then the mesh. (uvicorn would re-raise SIGTERM after serving and kill
    the process before the mesh could stop cleanly.)"""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


class GatewayServer:
    """uvicorn serving an app as a task of the running loop; ``url`` once started."""

    def __init__(
        self,
        app: FastAPI,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        header_seconds: float = HEADER_SECONDS,
    ) -> None:
        self.host, self.port = host, port
        self.url = ""
        self.app = app
        protocol = type("GatewayH11", (HeadTimedH11,), {"header_seconds": header_seconds})
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level="warning",
            lifespan="off",
            http=protocol,
            timeout_keep_alive=IDLE_SECONDS,
            # Past this many connections and requests at once, uvicorn answers 503.
            limit_concurrency=MAX_CONNECTIONS,
        )
        self._server = _EmbeddedServer(config)
        self._task: asyncio.Task[None] | None = None
        self._announced: health.Announcement | None = None

    async def start(self) -> str:
        # Bind here, so a busy port is an error we can explain (uvicorn would exit the process).
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self.port))
        except OSError as exc:
            sock.close()
            raise ConnectionError(
                f"cannot serve the HTTP gateway on {self.host}:{self.port} ({exc.strerror}); "
                "pass --port N, or --port 0 for any free port"
            ) from None
        port = sock.getsockname()[1]
        mcp: McpEndpoint | None = getattr(self.app.state, "mcp", None)
        if mcp is not None:  # before the first request: /mcp answers its own address only
            mcp.served_at(self.host, port)
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]))
        while not self._server.started:
            if self._task.done():
                self._task.result()
                raise ConnectionError("the HTTP gateway stopped while starting")
            await asyncio.sleep(0.02)
        self.url = f"http://{self.host}:{port}"
        gw: Gateway | None = getattr(self.app.state, "gateway", None)
        if gw is not None:  # `blendmesh status` and `nats micro ls` see it
            try:
                self._announced = await health.announce(gw)
            except BaseException:
                await self.stop()
                raise
        return self.url

    async def wait(self) -> None:
        """Until the server stops by itself (``stop()`` is how it is normally stopped)."""
        if self._task is not None:
            await asyncio.shield(self._task)

    async def stop(self) -> None:
        if self._announced is not None:
            await self._announced.stop()
            self._announced = None
        if self._task is None:
            return
        self._server.should_exit = True
        mcp: McpEndpoint | None = getattr(self.app.state, "mcp", None)
        if mcp is not None:
            await mcp.close()
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await self._task
        self._task = None
        auth: Authenticator | None = getattr(self.app.state, "auth", None)
        if auth is not None:  # the HTTP client that fetches the issuer's keys
            await auth.close()


class ServedGateway:
    """The gateway as a service of its own (``python -m services.doors.gateway``)."""

    name = "gateway"

    def __init__(self, server: GatewayServer) -> None:
        self.server = server
        self._stopped = False

    async def stop(self) -> None:
        self._stopped = True
        await self.server.stop()

    async def failed(self) -> BaseException:
        """The HTTP server ending by itself, not stopped: the gateway serves no more."""
        try:
            await self.server.wait()
        except Exception as exc:  # noqa: BLE001 - what it died of is the answer
            return exc
        if self._stopped:
            return await never()
        return ConnectionError("the HTTP gateway stopped serving")


async def start(settings: Settings, bus: Bus) -> ServedGateway:
    """Serve the gateway on BLENDMESH_GATEWAY_PORT (8000) until the service stops."""
    raw = settings.env.get("BLENDMESH_GATEWAY_PORT") or str(DEFAULT_PORT)
    if not raw.isdigit() or int(raw) > 65535:
        raise SettingsError(f"BLENDMESH_GATEWAY_PORT={raw!r} is not a port; use 0 to 65535")
    app = create_app(settings, bus)
    server = GatewayServer(app, port=int(raw))
    url = await server.start()
    log.warning("gateway: serving %s", url)
    if not len(app.state.auth):
        log.warning(
            "gateway: neither BLENDMESH_API_TOKENS nor BLENDMESH_OAUTH_ISSUER is set: "
            "every /api request answers 401"
        )
    return ServedGateway(server)
