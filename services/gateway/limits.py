"""The request body limit: the first thing a request meets, before parsing or authentication.

Anyone who can reach the port can send a body, token or not, so the gateway reads at
most ``max_bytes`` of it: a Content-Length over the limit is answered 413 without
reading anything, and a body without one (chunked) is counted as it arrives and answered
413 as soon as it passes the limit. A body within the limit is handed on whole.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services.gateway.errors import TooLarge, error_response


class BodyLimit:
    """ASGI middleware refusing request bodies over ``max_bytes`` with 413."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
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

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        message = (
            f"the request body is larger than {self.max_bytes} bytes, the most this gateway "
            "reads (BLENDMESH_MAX_BODY_BYTES); send a shorter prompt or a smaller plan"
        )
        await error_response(TooLarge, 413, message)(scope, receive, send)


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
