"""The issuer's keys (``services/doors/gateway/oauth/keys.py``): discovery, a bounded
cache, and a rate-limited re-fetch on an unknown kid, over an in-memory issuer and clock."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from services.doors.gateway.oauth.keys import (
    KEYS_TTL,
    REFETCH_EVERY,
    IssuerKeys,
    KeysUnavailable,
    metadata_urls,
)
from services.doors.gateway.oauth.tokens import TokenRefused

pytestmark = pytest.mark.asyncio

ISSUER = "https://issuer.example"
OIDC = f"{ISSUER}/.well-known/openid-configuration"
JWKS = f"{ISSUER}/jwks"


def jwk(kid: str) -> dict[str, Any]:
    return {"kty": "RSA", "kid": kid, "n": "AQAB", "e": "AQAB", "use": "sig"}


class Issuer:
    """Documents by URL; counts the GETs of each, fails those it is told to."""

    def __init__(self, *kids: str) -> None:
        self.docs: dict[str, Any] = {OIDC: {"issuer": ISSUER, "jwks_uri": JWKS}}
        self.rotate(*kids)
        self.gets: list[str] = []
        self.down = False
        self.gate: asyncio.Event | None = None

    def rotate(self, *kids: str) -> None:
        self.docs[JWKS] = {"keys": [jwk(k) for k in kids]}

    def count(self, url: str) -> int:
        return self.gets.count(url)

    async def __call__(self, url: str) -> Any:
        self.gets.append(url)
        if self.gate is not None:
            await self.gate.wait()
        if self.down or url not in self.docs:
            raise OSError(f"{url} answered 404")
        return self.docs[url]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def keys(issuer: Issuer, clock: Clock) -> IssuerKeys:
    return IssuerKeys(ISSUER, issuer, clock)


async def test_keys_when_asked_often_fetch_once_within_their_lifetime() -> None:
    issuer, clock = Issuer("k1", "k2"), Clock()
    cache = keys(issuer, clock)
    for kid in ("k1", "k2", "k1"):
        assert (await cache.key(kid))["kid"] == kid
    assert issuer.count(JWKS) == 1
    clock.now += KEYS_TTL + 1
    await cache.key("k1")
    assert issuer.count(JWKS) == 2  # stale: fetched again


async def test_keys_when_a_kid_is_unknown_fetch_again_and_find_a_rotated_key() -> None:
    issuer, clock = Issuer("k1"), Clock()
    cache = keys(issuer, clock)
    await cache.key("k1")
    clock.now += REFETCH_EVERY
    issuer.rotate("k1", "k2")
    assert (await cache.key("k2"))["kid"] == "k2"
    assert issuer.count(JWKS) == 2


async def test_keys_when_unknown_kids_come_fast_fetch_at_most_once_per_interval() -> None:
    issuer, clock = Issuer("k1"), Clock()
    cache = keys(issuer, clock)
    await cache.key("k1")
    for _ in range(3):  # keys fetched a moment ago are not fetched again for a made-up kid
        with pytest.raises(TokenRefused):
            await cache.key("made-up")
    assert issuer.count(JWKS) == 1
    clock.now += REFETCH_EVERY
    for n in range(20):
        with pytest.raises(TokenRefused, match="not among"):
            await cache.key(f"made-up-{n}")
        clock.now += 1
    assert issuer.count(JWKS) == 2  # the first fetch, one re-fetch; the rest waited
    clock.now += REFETCH_EVERY
    with pytest.raises(TokenRefused):
        await cache.key("made-up-again")
    assert issuer.count(JWKS) == 3


async def test_keys_when_many_ask_at_once_one_fetch_serves_them_all() -> None:
    issuer, clock = Issuer("k1"), Clock()
    issuer.gate = asyncio.Event()
    cache = keys(issuer, clock)
    waiting = [asyncio.ensure_future(cache.key("k1")) for _ in range(10)]
    await asyncio.sleep(0.01)
    issuer.gate.set()
    assert len(await asyncio.gather(*waiting)) == 10
    assert issuer.count(JWKS) == 1


async def test_keys_when_the_issuer_is_down_at_first_are_unavailable() -> None:
    issuer, clock = Issuer("k1"), Clock()
    issuer.down = True
    cache = keys(issuer, clock)
    for _ in range(5):
        with pytest.raises(KeysUnavailable, match=f"signing keys of {ISSUER}"):
            await cache.key("k1")
    assert len(issuer.gets) == 2  # both metadata addresses, once: not on every request
    issuer.down = False
    clock.now += REFETCH_EVERY
    assert (await cache.key("k1"))["kid"] == "k1"


async def test_keys_when_a_refresh_fails_keep_those_held() -> None:
    issuer, clock = Issuer("k1"), Clock()
    cache = keys(issuer, clock)
    await cache.key("k1")
    issuer.down = True
    clock.now += KEYS_TTL + 1
    fetched = len(issuer.gets)
    for _ in range(5):
        assert (await cache.key("k1"))["kid"] == "k1"
    assert len(issuer.gets) == fetched + 2  # one attempt (both metadata addresses), not five


async def test_keys_when_oidc_discovery_is_absent_read_authorization_server_metadata() -> None:
    issuer, clock = Issuer("k1"), Clock()
    del issuer.docs[OIDC]
    rfc8414 = f"{ISSUER}/.well-known/oauth-authorization-server"
    issuer.docs[rfc8414] = {"issuer": ISSUER, "jwks_uri": JWKS}
    assert (await keys(issuer, clock).key("k1"))["kid"] == "k1"
    assert issuer.gets == [OIDC, rfc8414, JWKS]


async def test_keys_when_metadata_names_another_issuer_or_a_plain_http_jwks_are_refused() -> None:
    issuer, clock = Issuer("k1"), Clock()
    issuer.docs[OIDC] = {"issuer": "https://evil.example", "jwks_uri": JWKS}
    with pytest.raises(KeysUnavailable):
        await keys(issuer, clock).key("k1")
    issuer.docs[OIDC] = {"issuer": ISSUER, "jwks_uri": "http://evil.example/jwks"}
    with pytest.raises(KeysUnavailable):
        await keys(issuer, clock).key("k1")
    assert "http://evil.example/jwks" not in issuer.gets


async def test_metadata_urls_when_the_issuer_has_a_path_insert_well_known_as_rfc8414_says() -> None:
    assert metadata_urls("https://id.example/tenant/") == [
        "https://id.example/tenant/.well-known/openid-configuration",
        "https://id.example/.well-known/oauth-authorization-server/tenant",
    ]
