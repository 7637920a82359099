"""Bearer tokens that map to users: static ones, and OAuth access tokens (JWTs).

Static tokens come from ``BLENDMESH_API_TOKENS`` (``token=user`` pairs, comma separated)
and from the file named by ``BLENDMESH_API_TOKENS_FILE`` (one pair a line, ``#``
comments). Every token is compared in constant time, and all of them are compared on
every request, so the time an answer takes says nothing about which token came close.
With BLENDMESH_OAUTH_ISSUER set, a bearer that is no static token is judged as an access
token of that issuer (``oauth/``, docs/adr/0050); static tokens keep working beside it.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable, Mapping
from pathlib import Path

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from services.doors.gateway.errors import (
    ApiError,
    AuthError,
    InsufficientScope,
    InvalidToken,
    Unavailable,
    challenge_error,
)
from services.doors.gateway.oauth.keys import KeysUnavailable
from services.doors.gateway.oauth.resource import challenge
from services.doors.gateway.oauth.settings import OAuthSettings
from services.doors.gateway.oauth.tokens import ScopeMissing, TokenRefused, looks_like_jwt
from services.doors.gateway.oauth.verifier import OAuthVerifier
from services.runtime.service.settings import SettingsError

_bearer = HTTPBearer(
    auto_error=False,
    description="A token from BLENDMESH_API_TOKENS, or an access token of BLENDMESH_OAUTH_ISSUER",
)


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


class Authenticator:
    """Which user a bearer token is, for every route, ``/mcp`` and the fair share alike."""

    def __init__(self, tokens: Tokens, oauth: OAuthVerifier | None = None) -> None:
        self.tokens = tokens
        self.oauth = oauth

    @property
    def rules(self) -> OAuthSettings | None:
        return self.oauth.rules if self.oauth is not None else None

    def __len__(self) -> int:
        """How many ways in there are: static tokens, and one for an issuer."""
        return len(self.tokens) + (self.oauth is not None)

    async def user(self, token: str) -> str:
        """The token's user, or the AuthError (503 ``Unavailable`` without the issuer's
        keys) that says why not."""
        found = self.tokens.user(token)
        if found is not None:
            return found
        if self.oauth is None or not looks_like_jwt(token):
            raise InvalidToken("the bearer token is not valid")
        try:
            return await self.oauth.user(token)
        except ScopeMissing as exc:
            raise InsufficientScope(str(exc)) from None
        except TokenRefused as exc:
            raise InvalidToken(str(exc)) from None
        except KeysUnavailable as exc:
            raise Unavailable(str(exc)) from None

    async def known(self, token: str) -> str | None:
        """The token's user, or None for any refusal (the routes then say why)."""
        try:
            return await self.user(token)
        except ApiError:
            return None

    async def header_user(self, authorization: str) -> str:
        """The user of an ``Authorization`` header's value."""
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AuthError("send Authorization: Bearer <token>")
        return await self.user(token.strip())

    def challenge(self, kind: type[ApiError]) -> str:
        """The ``WWW-Authenticate`` value an answer refusing ``kind`` carries."""
        return challenge(self.rules, challenge_error(kind))

    async def close(self) -> None:
        if self.oauth is not None:
            await self.oauth.close()


async def current_user(
    request: Request,
    credentials: HTTPAuthorizationCredentials | None = Depends(_bearer),  # noqa: B008
) -> str:
    """The user the request's bearer token maps to; 401 otherwise."""
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise AuthError("send Authorization: Bearer <token>")
    auth: Authenticator = request.app.state.auth
    return await auth.user(credentials.credentials)
