"""The request body limit: the first thing a request meets, before parsing or authentication.

Anyone who can reach the port can send a body, token or not, so the gateway reads at
most ``max_bytes`` of it: a Content-Length over the limit is answered 413 without
reading anything, and a body without one (chunked) is counted as it arrives and answered
413 as soon as it passes the limit. A body within the limit is handed on whole.

A route that takes a file (a .blend to import) is exempt from that limit, explicitly and
with one of its own (``Streamed``): its body is not held here but handed on as it
arrives, still refused 413 by Content-Length up front, and counted on the way so reading
past its limit raises ``TooLarge`` in the route (the error table answers 413).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services.doors.gateway.errors import TooLarge, error_response


@dataclass(frozen=True)
class Streamed:
    """A route whose body streams to it, up to ``max_bytes`` (named by ``setting``)."""

    method: str
    path: re.Pattern[str]
    max_bytes: int
    setting: str
    what: str  # what the body is, for the message

    def matches(self, scope: Scope) -> bool:
        return scope.get("method") == self.method and bool(self.path.fullmatch(scope["path"]))

    def message(self) -> str:
        return (
            f"{self.what} is larger than {self.max_bytes} bytes, the most this gateway takes "
            f"({self.setting}); send a smaller one or raise the limit"
        )


class BodyLimit:
    """ASGI middleware refusing request bodies over ``max_bytes`` with 413."""

    def __init__(self, app: ASGIApp, max_bytes: int, streamed: Sequence[Streamed] = ()) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.streamed = tuple(streamed)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        route = next((r for r in self.streamed if r.matches(scope)), None)
        if route is not None:
            await self._stream(route, scope, receive, send)
            return
        if (_content_length(scope) or 0) > self.max_bytes:
            await self._refuse(scope, receive, send)
            return
        body: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client hung up before sending its whole body
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._refuse(scope, receive, send)
                return
            body.append(chunk)
            if not message.get("more_body", False):
                break
        await self.app(scope, _replay(b"".join(body), receive), send)

    async def _stream(self, route: Streamed, scope: Scope, receive: Receive, send: Send) -> None:
        if (_content_length(scope) or 0) > route.max_bytes:
            await error_response(TooLarge, 413, route.message())(scope, receive, send)
            return
        await self.app(scope, _counted(receive, route), send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        await error_response(TooLarge, 413, refusal(scope, self.max_bytes))(scope, receive, send)


MCP_PATH = re.compile(r"/mcp/?")


def refusal(scope: Scope, max_bytes: int) -> str:
    """Why a body is too large, and what to send instead: on ``/mcp`` the body is mostly
    an asset's bytes (a prompt is far smaller), which have a route of their own."""
    said = (
        f"the request body is larger than {max_bytes} bytes, the most this gateway reads "
        "(BLENDMESH_MAX_BODY_BYTES)"
    )
    if MCP_PATH.fullmatch(scope.get("path", "")):
        return (
            f"{said} in one MCP request; stage a file this large with POST /api/uploads "
            "(up to BLENDMESH_MAX_UPLOAD_BYTES) and name the blob it answers in "
            "import_asset's `upload`"
        )
    return f"{said}; send a shorter prompt or a smaller plan"


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # the server rejects a malformed header itself
    return None


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives the app the body read already, then the real channel's
    messages (a streaming response listens there for the client hanging up)."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replayed


def _counted(receive: Receive, route: Streamed) -> Receive:
    """A ``receive`` that raises ``TooLarge`` once the body passes ``route``'s limit (a
    chunked body, or one whose Content-Length understated it)."""
    size = 0

    async def counted() -> Message:
        nonlocal size
        message = await receive()
        if message["type"] == "http.request":
            size += len(message.get("body", b""))
            if size > route.max_bytes:
                raise TooLarge(route.message())
        return message

    return counted
