"""How the gateway answers with OAuth on and off, in process: the metadata routes, the
challenge on ``/api`` and ``/mcp``, and 503 while the issuer's keys cannot be had. The
issuer is an in-memory one here; tests/integration/test_oauth_gateway.py has the real one."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, cast

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from services.doors.gateway.app import create_app
from services.doors.gateway.auth import Tokens
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings

pytestmark = pytest.mark.asyncio

ISSUER = "https://id.example"
RESOURCE = "https://blend.example/mcp"
METADATA = "https://blend.example/.well-known/oauth-protected-resource/mcp"
KEY = ec.generate_private_key(ec.SECP256R1())
JWK = {**json.loads(jwt.algorithms.ECAlgorithm.to_jwk(KEY.public_key())), "kid": "k1"}
OAUTH = {
    "BLENDMESH_OAUTH_ISSUER": ISSUER,
    "BLENDMESH_OAUTH_RESOURCE": RESOURCE,
    "BLENDMESH_OAUTH_SUBJECTS": "client-ana=ana",
    "BLENDMESH_MCP_ALLOWED_HOSTS": "gw",
}


class Issuer:
    def __init__(self) -> None:
        self.up = True

    async def __call__(self, url: str) -> Any:
        if not self.up:
            raise OSError(f"{url}: ConnectError")
        if url == f"{ISSUER}/.well-known/openid-configuration":
            return {"issuer": ISSUER, "jwks_uri": f"{ISSUER}/jwks"}
        return {"keys": [JWK]}


def token(sub: str = "client-ana") -> str:
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": RESOURCE, "sub": sub, "iat": now, "exp": now + 60}
    return jwt.encode(claims, KEY, algorithm="ES256", headers={"kid": "k1"})


def client(tmp_path: Path, env: dict[str, str], issuer: Issuer | None = None) -> httpx.AsyncClient:
    settings = Settings(home=tmp_path, env=env, metrics_token="tok-operator")
    app = create_app(settings, cast(Bus, None), Tokens({"tok-local": "local"}), fetch=issuer)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://gw")


def bearer(value: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {value}"}


async def test_gateway_when_oauth_is_on_takes_the_issuers_tokens_and_static_ones(
    tmp_path: Path,
) -> None:
    async with client(tmp_path, OAUTH, Issuer()) as http:
        assert (await http.get("/api/me", headers=bearer(token()))).json()["user"] == "ana"
        assert (await http.get("/api/me", headers=bearer("tok-local"))).json()["user"] == "local"
        for path in (
            "/.well-known/oauth-protected-resource",
            "/.well-known/oauth-protected-resource/mcp",
        ):
            meta = await http.get(path)
            assert meta.status_code == 200 and meta.json()["resource"] == RESOURCE
            assert meta.headers["Access-Control-Allow-Origin"] == "*"


async def test_gateway_when_a_token_is_refused_challenges_with_the_metadata_on_both_doors(
    tmp_path: Path,
) -> None:
    async with client(tmp_path, OAUTH, Issuer()) as http:
        none = await http.get("/api/runs")
        assert none.headers["WWW-Authenticate"] == (
            f'Bearer realm="blendmesh", resource_metadata="{METADATA}"'
        )
        for answer in (
            await http.get("/api/runs", headers=bearer(token("client-mallory"))),
            await http.post("/mcp", headers=bearer(token("client-mallory")), json={}),
            await http.post("/mcp", headers=bearer("not-a-token"), json={}),
        ):
            assert answer.status_code == 401, answer.text
            assert answer.json()["error"]["type"] == "AuthError"
            assert answer.headers["WWW-Authenticate"] == (
                f'Bearer realm="blendmesh", resource_metadata="{METADATA}", error="invalid_token"'
            )


async def test_gateway_when_the_issuer_is_unreachable_answers_503_not_401(
    tmp_path: Path,
) -> None:
    issuer = Issuer()
    issuer.up = False
    async with client(tmp_path, OAUTH, issuer) as http:
        for answer in (
            await http.get("/api/me", headers=bearer(token())),
            await http.post("/mcp", headers=bearer(token()), json={}),
        ):
            assert answer.status_code == 503, answer.text
            assert ISSUER in answer.json()["error"]["message"]
            assert "WWW-Authenticate" not in answer.headers
        # a static token does not depend on the issuer
        assert (await http.get("/api/me", headers=bearer("tok-local"))).status_code == 200


async def test_gateway_when_oauth_is_off_has_no_metadata_and_a_plain_challenge(
    tmp_path: Path,
) -> None:
    async with client(tmp_path, {"BLENDMESH_MCP_ALLOWED_HOSTS": "gw"}) as http:
        missing = await http.get("/.well-known/oauth-protected-resource")
        assert missing.status_code == 404 and "static bearer tokens" in missing.text
        refused = await http.get("/api/runs", headers=bearer(token()))
        assert refused.status_code == 401
        assert refused.headers["WWW-Authenticate"] == (
            'Bearer realm="blendmesh", error="invalid_token"'
        )


async def test_gateway_when_an_access_token_user_floods_holds_them_to_their_share(
    tmp_path: Path,
) -> None:
    # A byte share refilled at one byte a second: the second body waits minutes, however
    # slowly the machine runs the test.
    shares = {"BLENDMESH_USER_BYTES_PER_SECOND": "1", "BLENDMESH_USER_BYTES_BURST": "1000"}
    body = b"x" * 900
    async with client(tmp_path, {**OAUTH, **shares}, Issuer()) as http:
        first = await http.post("/api/me", content=body, headers=bearer(token()))
        second = await http.post("/api/me", content=body, headers=bearer(token()))
        assert first.status_code != 429 and second.status_code == 429  # ana's share, by sub
        assert "BLENDMESH_USER_BYTES_PER_SECOND" in second.text
        static = await http.post("/api/me", content=body, headers=bearer("tok-local"))
        assert static.status_code != 429  # local's share is their own


async def test_gateway_when_metrics_want_the_operators_token_names_no_oauth_metadata(
    tmp_path: Path,
) -> None:
    async with client(tmp_path, OAUTH, Issuer()) as http:
        refused = await http.get("/metrics", headers=bearer(token()))
        assert refused.status_code == 401 and "BLENDMESH_METRICS_TOKEN" in refused.text
        assert refused.headers["WWW-Authenticate"] == 'Bearer realm="blendmesh"'
