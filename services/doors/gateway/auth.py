"""Bearer tokens that map to users.

Tokens come from ``BLENDMESH_API_TOKENS`` (``token=user`` pairs, comma separated) and
from the file named by ``BLENDMESH_API_TOKENS_FILE`` (one pair a line, ``#`` comments).
Every token is compared in constant time, and all of them are compared on every request,
so the time an answer takes says nothing about which token came close.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable, Mapping
from pathlib import Path

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from services.doors.gateway.errors import AuthError
from services.runtime.settings import SettingsError

_bearer = HTTPBearer(auto_error=False, description="A token from BLENDMESH_API_TOKENS")


class Tokens:
    """Which user a bearer token belongs to."""

    def __init__(self, pairs: Mapping[str, str]) -> None:
        self._pairs = [(token.encode(), user) for token, user in pairs.items()]

    def __len__(self) -> int:
        return len(self._pairs)

    def user(self, token: str) -> str | None:
        given, found = token.encode(), None
        for known, user in self._pairs:
            if hmac.compare_digest(given, known) and found is None:
                found = user
        return found

    @staticmethod
    def parse(entries: Iterable[str], where: str) -> dict[str, str]:
        """``token=user`` entries; blank lines and ``#`` comments are skipped."""
        pairs: dict[str, str] = {}
        for raw in entries:
            entry = raw.strip()
            if not entry or entry.startswith("#"):
                continue
            token, sep, user = (part.strip() for part in entry.partition("="))
            if not sep or not token or not user:
                # The entry holds a secret: name the place, never the text.
                raise SettingsError(f"{where} has an entry that is not token=user")
            pairs[token] = user
        return pairs

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Tokens:
        listed = env.get("BLENDMESH_API_TOKENS", "").split(",")
        pairs = cls.parse(listed, "BLENDMESH_API_TOKENS")
        path = env.get("BLENDMESH_API_TOKENS_FILE")
        if path:
            try:
                lines = Path(path).read_text().splitlines()
            except OSError as exc:
                raise SettingsError(
                    f"BLENDMESH_API_TOKENS_FILE={path}: cannot read it ({exc.strerror})"
                ) from None
            pairs.update(cls.parse(lines, "BLENDMESH_API_TOKENS_FILE"))
        return cls(pairs)


async def current_user(
    request: Request,
    credentials: HTTPAuthorizationCredentials | None = Depends(_bearer),  # noqa: B008
) -> str:
    """The user the request's bearer token maps to; 401 otherwise."""
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise AuthError("send Authorization: Bearer <token>")
    tokens: Tokens = request.app.state.tokens
    user = tokens.user(credentials.credentials)
    if user is None:
        raise AuthError("the bearer token is not valid")
    return user
