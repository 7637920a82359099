"""The issuer's signing keys: discovered, fetched asynchronously, cached for a bounded time.

The JWKS address comes from the issuer's metadata (OpenID Connect discovery, else RFC 8414
authorization-server metadata), whose ``issuer`` must be the configured one. Keys are kept
``KEYS_TTL`` seconds; a token naming a kid the cache lacks fetches them again at once (the
issuer rotated its keys), but at most once in ``REFETCH_EVERY`` seconds, so tokens with
made-up kids cannot make blendmesh hammer the issuer; a failed fetch is not tried again
sooner either. One fetch at a time: concurrent requests wait for it rather than fetching
alike. A failed refresh keeps the keys it had.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol
from urllib.parse import urlsplit

import httpx

from contracts.errors import BlendmeshError
from services.doors.gateway.oauth.settings import check_issuer
from services.doors.gateway.oauth.tokens import TokenRefused, keys_of

log = logging.getLogger("blendmesh.gateway")

KEYS_TTL = 300.0
REFETCH_EVERY = 30.0
FETCH_SECONDS = 5.0
MAX_DOCUMENT_BYTES = 256 * 1024


class KeysUnavailable(BlendmeshError):
    """The issuer's keys could not be fetched and none are cached (503: retry later)."""


class FetchJson(Protocol):
    """GET a URL and decode its JSON body; raises ``OSError`` or ``ValueError`` on failure."""

    async def __call__(self, url: str) -> Any: ...


class HttpJson:
    """``FetchJson`` over httpx: a bounded time and a bounded body, no redirects."""

    def __init__(self, client: httpx.AsyncClient | None = None) -> None:
        # The environment's proxy and CA settings apply (HTTPS_PROXY, SSL_CERT_FILE): a
        # studio's issuer is often behind both.
        self._client = client or httpx.AsyncClient(timeout=FETCH_SECONDS, follow_redirects=False)

    async def __call__(self, url: str) -> Any:
        try:
            async with self._client.stream("GET", url) as response:
                if response.status_code != 200:
                    raise OSError(f"{url} answered {response.status_code}")
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_DOCUMENT_BYTES:
                        raise ValueError(f"{url} sent more than {MAX_DOCUMENT_BYTES} bytes")
        except httpx.HTTPError as exc:
            raise OSError(f"{url}: {type(exc).__name__}") from None
        return json.loads(body)

    async def close(self) -> None:
        await self._client.aclose()


def metadata_urls(issuer: str) -> list[str]:
    """Where the issuer's metadata may be: OpenID discovery, then RFC 8414 §3.1."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    origin = f"{parts.scheme}://{parts.netloc}"
    return [
        f"{origin}{path}/.well-known/openid-configuration",
        f"{origin}/.well-known/oauth-authorization-server{path}",
    ]


class IssuerKeys:
    """The issuer's public keys by kid, as ``tokens.claims_of`` needs them."""

    def __init__(
        self,
        issuer: str,
        fetch: FetchJson,
        clock: Callable[[], float],
        ttl: float = KEYS_TTL,
        refetch_every: float = REFETCH_EVERY,
    ) -> None:
        self.issuer = issuer
        self._fetch, self._clock = fetch, clock
        self._ttl, self._refetch_every = ttl, refetch_every
        self._keys: dict[str, Mapping[str, Any]] = {}
        self._fetched_at: float | None = None  # of the keys held
        self._tried_at: float | None = None  # of the last attempt, good or not
        self._lock = asyncio.Lock()

    async def key(self, kid: str) -> Mapping[str, Any]:
        """The key named ``kid``; fetches when stale or unknown, within the rate limit."""
        if not self._fresh() or kid not in self._keys:
            async with self._lock:  # a request that waited here finds the fetch done
                wanted = not self._fresh() or kid not in self._keys
                if wanted and self._may_fetch():
                    await self._refresh()
        if self._fetched_at is None:
            raise KeysUnavailable(
                f"the signing keys of {self.issuer} could not be fetched; retry shortly"
            )
        found = self._keys.get(kid)
        if found is None:
            named = f"key id {kid[:64]!r}" if kid else "no key id"
            raise TokenRefused(
                f"the token names {named}, which is not among {self.issuer}'s signing keys"
            )
        return found

    def _fresh(self) -> bool:
        return self._fetched_at is not None and self._clock() - self._fetched_at < self._ttl

    def _may_fetch(self) -> bool:
        # Every fetch counts, good or failed: an issuer that is down is not asked again
        # on every request either.
        return self._tried_at is None or self._clock() - self._tried_at >= self._refetch_every

    async def _refresh(self) -> None:
        self._tried_at = self._clock()
        try:
            keys = keys_of(await self._fetch(await self._jwks_url()), f"{self.issuer}'s JWKS")
        except (OSError, ValueError) as exc:
            # Keys held stay in use (an issuer's brief outage locks nobody out); without
            # any, ``key`` answers KeysUnavailable until the next attempt succeeds.
            log.warning("gateway: the OAuth issuer's keys could not be fetched: %s", exc)
            return
        self._keys, self._fetched_at = keys, self._clock()

    async def _jwks_url(self) -> str:
        failures: list[str] = []
        for url in metadata_urls(self.issuer):
            try:
                meta = await self._fetch(url)
            except (OSError, ValueError) as exc:
                failures.append(str(exc))
                continue
            if not isinstance(meta, dict) or meta.get("issuer") != self.issuer:
                raise ValueError(f"{url} names another issuer than {self.issuer}")
            jwks = meta.get("jwks_uri")
            if not isinstance(jwks, str):
                raise ValueError(f"{url} names no jwks_uri")
            try:
                return check_issuer(jwks, "jwks_uri")  # https, or http on loopback alone
            except ValueError:
                raise ValueError(f"{url} names a jwks_uri that is not https") from None
        raise OSError(f"no metadata for {self.issuer}: {'; '.join(failures)}")
