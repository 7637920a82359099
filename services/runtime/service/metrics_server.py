"""``/metrics`` of a service run as a process of its own (``BLENDMESH_METRICS_PORT``).

``blendmesh up`` runs every service in one process and the gateway serves their metrics
on its own port; under a Procfile each process serves its own here. A small asyncio
server, not prometheus_client's thread: it stops with the service, reads at most a
request head, and answers only ``GET /metrics``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging

from services.runtime.service import metrics
from services.runtime.service.settings import Settings, SettingsError

log = logging.getLogger("blendmesh.metrics")

MAX_HEAD = 8192  # bytes of request line and headers read at most
READ_WITHIN = 5.0  # seconds a client has to send its request head


def authorized(authorization: str | None, token: str | None) -> bool:
    """Whether a request's ``Authorization`` header opens ``/metrics``: always when no
    token is configured, else only ``Bearer <token>`` (compared in constant time)."""
    if token is None:
        return True
    scheme, _, given = (authorization or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip(), token)


class MetricsServer:
    """Serves this process's series on ``host:port``; ``url`` once started."""

    def __init__(self, host: str, port: int, token: str | None = None) -> None:
        self.host, self.port, self._token = host, port, token
        self.url = ""
        self._server: asyncio.Server | None = None

    async def start(self) -> str:
        try:
            self._server = await asyncio.start_server(
                self._answer, self.host, self.port, limit=MAX_HEAD
            )
        except OSError as exc:
            raise SettingsError(
                f"cannot serve metrics on {self.host}:{self.port} ({exc.strerror}); set "
                "BLENDMESH_METRICS_PORT to a free port, or 0 for any, or unset it"
            ) from None
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://{self.host}:{port}/metrics"
        return self.url

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
            with contextlib.suppress(Exception):
                await server.wait_closed()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_WITHIN)
            status, body, extra = await self._response(head)
        except (asyncio.LimitOverrunError, asyncio.IncompleteReadError, TimeoutError):
            status, body, extra = "400 Bad Request", b"send one HTTP GET /metrics request\n", ""
        except Exception:  # a failed scrape must not end the server
            log.exception("metrics: a scrape failed")
            status, body, extra = "500 Internal Server Error", b"see the service's log\n", ""
        kind = metrics.CONTENT_TYPE if status.startswith("200") else "text/plain"
        writer.write(
            f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {len(body)}\r\n"
            f"{extra}Connection: close\r\n\r\n".encode()
            + body
        )
        with contextlib.suppress(Exception):
            await writer.drain()
            writer.close()
            await writer.wait_closed()

    async def _response(self, head: bytes) -> tuple[str, bytes, str]:
        lines = head.decode("latin-1").split("\r\n")
        method, _, rest = lines[0].partition(" ")
        path = rest.partition(" ")[0].partition("?")[0]
        if path != "/metrics":
            return "404 Not Found", b"metrics are at /metrics\n", ""
        if method not in ("GET", "HEAD"):
            return "405 Method Not Allowed", b"use GET /metrics\n", "Allow: GET, HEAD\r\n"
        headers = dict(
            (name.strip().lower(), value.strip())
            for name, _, value in (line.partition(":") for line in lines[1:] if line)
        )
        if not authorized(headers.get("authorization"), self._token):
            return (
                "401 Unauthorized",
                b"send Authorization: Bearer <BLENDMESH_METRICS_TOKEN>\n",
                'WWW-Authenticate: Bearer realm="metrics"\r\n',
            )
        body = await asyncio.to_thread(metrics.exposition)
        return "200 OK", b"" if method == "HEAD" else body, ""


async def serve_metrics(settings: Settings) -> MetricsServer | None:
    """Start the server ``settings`` ask for, or None when BLENDMESH_METRICS_PORT is unset."""
    if settings.metrics_port is None:
        return None
    server = MetricsServer(settings.metrics_host, settings.metrics_port, settings.metrics_token)
    log.warning("metrics: serving %s", await server.start())
    return server
