"""Each user's share of the gateway, for every route and ``/mcp`` alike.

An ASGI middleware around the whole app: a request whose bearer token names a user is
admitted by that user's share (``services/doors/core/fairness.py``) before anything else
reads it, and refused 429 with ``Retry-After`` and a message naming the limit and its
setting when it is over; the slot is given back when the answer has been sent (a
streamed answer holds it while it streams). A request without a valid token is left to
the routes, which answer 401; the body limit bounds what it can send.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from starlette.types import ASGIApp, Receive, Scope, Send

from services.doors.core.fairness import Fairness
from services.doors.gateway.auth import Authenticator
from services.doors.gateway.errors import TooMany, error_response


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


def _size(scope: Scope) -> int:
    raw = _header(scope, b"content-length") or ""
    return int(raw) if raw.isdigit() else 0


class FairShare:
    def __init__(self, app: ASGIApp, auth: Callable[[], Authenticator], fairness: Fairness) -> None:
        self.app = app
        self.auth = auth
        self.fairness = fairness

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        scheme, _, token = (_header(scope, b"authorization") or "").partition(" ")
        # An access token is verified here and again by the route: a signature check is
        # far cheaper than a request, and its keys are cached (oauth/keys.py).
        user = await self.auth().known(token.strip()) if scheme.lower() == "bearer" else None
        if user is None:
            await self.app(scope, receive, send)
            return
        refusal = self.fairness.admit(user, _size(scope))
        if refusal is not None:
            response = error_response(TooMany, 429, refusal.message)
            response.headers["Retry-After"] = str(max(1, math.ceil(refusal.retry_after)))
            await response(scope, receive, send)
            return
        try:
            await self.app(scope, receive, send)
        finally:
            self.fairness.done(user)
