"""Which blendmesh user an access token is: its header, the issuer's key, its claims."""

from __future__ import annotations

import time

from services.doors.gateway.oauth.keys import FetchJson, HttpJson, IssuerKeys
from services.doors.gateway.oauth.settings import OAuthSettings
from services.doors.gateway.oauth.tokens import claims_of, header_of, user_of


class OAuthVerifier:
    """Bearer JWTs of the configured issuer, checked against its cached keys."""

    def __init__(self, rules: OAuthSettings, fetch: FetchJson | None = None) -> None:
        self.rules = rules
        self._http: HttpJson | None = None
        if fetch is None:  # the verifier owns (and closes) the client it made
            self._http = fetch = HttpJson()
        self.keys = IssuerKeys(rules.issuer, fetch, time.monotonic)

    async def user(self, token: str) -> str:
        """The token's user; ``TokenRefused`` (or ``ScopeMissing``) saying why not, or
        ``KeysUnavailable`` while the issuer's keys cannot be had."""
        header = header_of(token, self.rules)
        jwk = await self.keys.key(header.kid)
        return user_of(claims_of(token, header, jwk, self.rules), self.rules)

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()
