"""OAuth 2.1 on ``/mcp`` and ``/api`` against a real OpenID provider (``oidc-provider``),
on a real mesh and real Blender: tokens come from the provider's token endpoint over HTTP
(client_credentials, resource indicators), never made by hand, except the forgeries a
hostile caller would try (an altered signature, ``alg: none``, a key the issuer never had).
"""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

import httpx
import jwt
import pytest
import pytest_asyncio
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp import ClientSession
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from services.doors.cli.mesh import Mesh
from services.doors.gateway.app import GatewayServer, create_app
from services.doors.gateway.auth import Tokens
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.checked_session import CheckedSession
from tests.support.meshes import mesh_fixture
from tests.support.oidc_provider import Client, OidcProvider

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(300),
    pytest.mark.asyncio(loop_scope="module"),
]

BRIEF_TTL = 5  # seconds client-brief's tokens live
LEEWAY = 1
CLIENTS = [
    Client("client-ana", "secret-ana"),
    Client("client-ben", "secret-ben"),
    Client("client-carol", "secret-carol"),  # mapped to nobody
    Client("client-brief", "secret-brief", ttl=BRIEF_TTL),
]
SUBJECTS = "client-ana=ana,client-ben=ben,client-brief=ana"
STATIC = {"tok-local": "local"}


@pytest.fixture(scope="module")
def port() -> int:
    """A port for the gateway, known before it starts: the resource (and so every token's
    audience) is its URL, as an MCP client derives it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        found: int = sock.getsockname()[1]
        return found


def resource_of(url: str) -> str:
    return f"{url}/mcp"


def metadata_of(url: str) -> str:
    return f"{url}/.well-known/oauth-protected-resource/mcp"


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    home = tmp_path_factory.mktemp("home")
    return Settings(home=home, prefix="bmoauth", user="local", previews=False)


mesh = mesh_fixture(client="test-oauth")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def providers(
    tmp_path_factory: pytest.TempPathFactory, port: int
) -> AsyncIterator[tuple[OidcProvider, OidcProvider]]:
    """The issuer blendmesh trusts, and a second one signing with the same key."""
    work = tmp_path_factory.mktemp("oidc")
    keys, resource = work / "keys.json", resource_of(f"http://127.0.0.1:{port}")
    trusted = await OidcProvider.start(work, keys, resource, CLIENTS)
    try:
        other = await OidcProvider.start(work, keys, resource, CLIENTS)
        try:
            yield trusted, other
        finally:
            await other.stop()
    finally:
        await trusted.stop()


@pytest.fixture(scope="module")
def provider(providers: tuple[OidcProvider, OidcProvider]) -> OidcProvider:
    return providers[0]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gateway(mesh: tuple[Mesh, Bus], provider: OidcProvider, port: int) -> AsyncIterator[str]:
    env = {
        **mesh[0].settings.env,
        "BLENDMESH_OAUTH_ISSUER": provider.issuer,
        "BLENDMESH_OAUTH_RESOURCE": resource_of(f"http://127.0.0.1:{port}"),
        "BLENDMESH_OAUTH_SUBJECTS": SUBJECTS,
        "BLENDMESH_OAUTH_SCOPES": "blendmesh",
        "BLENDMESH_OAUTH_LEEWAY": str(LEEWAY),
    }
    settings = replace(mesh[0].settings, env=env)
    app = create_app(settings, mesh[1], Tokens(STATIC), run_timeout=120)
    server = GatewayServer(app, port=port)
    url = await server.start()
    try:
        yield url
    finally:
        await server.stop()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@asynccontextmanager
async def door(url: str, **client: Any) -> AsyncIterator[ClientSession]:
    async with (
        httpx.AsyncClient(timeout=httpx.Timeout(30, read=300), **client) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write, _),
        CheckedSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def api(url: str, method: str, path: str, token: str | None, **kw: Any) -> httpx.Response:
    headers = bearer(token) if token is not None else {}
    async with httpx.AsyncClient(base_url=url, timeout=180) as http:
        return await http.request(method, path, headers=headers, **kw)


def refused(response: httpx.Response, status: int, words: str) -> str:
    """The refusal's challenge, once status, error type and message are as expected."""
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["type"] == "AuthError" and words in error["message"], error
    return response.headers["WWW-Authenticate"]


def segments(token: str) -> list[str]:
    return token.split(".")


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


# -- discovery ---------------------------------------------------------------------------


async def test_metadata_when_fetched_names_the_issuer_resource_and_scopes(
    gateway: str, provider: OidcProvider
) -> None:
    for path in (
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ):
        answer = await api(gateway, "GET", path, None)
        assert answer.status_code == 200, answer.text
        assert answer.json()["resource"] == resource_of(gateway)
        assert answer.json()["authorization_servers"] == [provider.issuer]
        assert answer.json()["scopes_supported"] == ["blendmesh"]
        assert answer.json()["bearer_methods_supported"] == ["header"]


@pytest.mark.clause("002-§errors.2")
async def test_no_token_when_calling_mcp_or_api_answers_401_naming_the_metadata(
    gateway: str,
) -> None:
    for answer in (
        await api(gateway, "POST", "/mcp", None, json={}),
        await api(gateway, "GET", "/api/runs", None),
    ):
        challenge = refused(answer, 401, "send Authorization: Bearer")
        assert f'resource_metadata="{metadata_of(gateway)}"' in challenge
        assert "error=" not in challenge  # no token was sent, so none was invalid


# -- the valid token ---------------------------------------------------------------------


async def test_valid_token_when_running_through_mcp_commits_as_the_mapped_user(
    gateway: str, provider: OidcProvider
) -> None:
    token = await provider.token("client-ana")
    async with door(gateway, headers=bearer(token)) as session:
        made = await session.call_tool(
            "run", {"scene_id": "oauth-mcp", "request": "add a cube named Box"}
        )
        assert not made.isError, made.content
        scenes = await session.call_tool("scenes", {})
        assert "oauth-mcp" in {s["scene_id"] for s in (scenes.structuredContent or {})["scenes"]}
    mine = await api(gateway, "GET", "/api/scenes/oauth-mcp/history", token)
    assert mine.status_code == 200 and mine.json()["revisions"][-1]["user"] == "ana"


async def test_valid_token_when_running_through_the_api_commits_as_the_mapped_user(
    gateway: str, provider: OidcProvider
) -> None:
    token = await provider.token("client-ana")
    ran = await api(
        gateway, "POST", "/api/agent/run", token,
        json={"prompt": "add a sphere named Ball", "sceneId": "oauth-api"},
    )  # fmt: skip
    assert ran.status_code == 200 and ran.json()["status"] == "completed", ran.text
    me = await api(gateway, "GET", "/api/me", token)
    assert me.json()["user"] == "ana"


async def test_mcp_sdk_oauth_client_when_it_discovers_from_the_401_gets_in(
    gateway: str, provider: OidcProvider
) -> None:
    """What a remote MCP host does: 401, the metadata it names, the issuer's metadata, a
    token for the resource, and the call again with it (the MCP SDK's own client)."""

    class Memory:
        def __init__(self) -> None:
            self.tokens: OAuthToken | None = None
            self.client: OAuthClientInformationFull | None = None

        async def get_tokens(self) -> OAuthToken | None:
            return self.tokens

        async def set_tokens(self, tokens: OAuthToken) -> None:
            self.tokens = tokens

        async def get_client_info(self) -> OAuthClientInformationFull | None:
            return self.client

        async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
            self.client = client_info

    storage = Memory()
    sdk = ClientCredentialsOAuthProvider(
        server_url=f"{gateway}/mcp",
        storage=storage,
        client_id="client-ben",
        client_secret="secret-ben",
        scopes="blendmesh",
        issuer=provider.issuer,  # where the client was registered, as a host is told
    )
    seen: list[tuple[str, str, int]] = []

    async def record(response: httpx.Response) -> None:
        request = response.request
        seen.append((request.method, str(request.url).split("?")[0], response.status_code))

    async with door(gateway, auth=sdk, event_hooks={"response": [record]}) as session:
        answer = await session.call_tool("scenes", {})
        assert not answer.isError, answer.content
    # The way in, in order: refused, the metadata the challenge named, the issuer's
    # metadata, a token for the resource, admitted; and no second token after that.
    assert seen[:5] == [
        ("POST", f"{gateway}/mcp", 401),
        ("GET", metadata_of(gateway), 200),
        ("GET", f"{provider.issuer}/.well-known/oauth-authorization-server", 200),
        ("POST", f"{provider.issuer}/token", 200),
        ("POST", f"{gateway}/mcp", 200),
    ]
    assert all(s[2] < 400 for s in seen[4:]), seen
    assert storage.tokens is not None
    claims = jwt.decode(storage.tokens.access_token, options={"verify_signature": False})
    assert claims["aud"] == resource_of(gateway) and claims["sub"] == "client-ben"


async def test_static_token_when_oauth_is_on_still_works(gateway: str) -> None:
    me = await api(gateway, "GET", "/api/me", "tok-local")
    assert me.status_code == 200 and me.json()["user"] == "local"


# -- tokens refused ----------------------------------------------------------------------


async def test_expired_token_when_used_is_refused_as_invalid_token(
    gateway: str, provider: OidcProvider
) -> None:
    token = await provider.token("client-brief")
    assert (await api(gateway, "GET", "/api/me", token)).status_code == 200
    claims = jwt.decode(token, options={"verify_signature": False})
    await asyncio.sleep(max(0.0, claims["exp"] + LEEWAY + 1 - time.time()))
    for answer in (
        await api(gateway, "GET", "/api/me", token),
        await api(gateway, "POST", "/mcp", token, json={}),
    ):
        challenge = refused(answer, 401, "expired")
        assert 'error="invalid_token"' in challenge and metadata_of(gateway) in challenge


async def test_token_for_another_audience_when_used_is_refused(
    gateway: str, provider: OidcProvider
) -> None:
    token = await provider.token("client-ana", resource="http://127.0.0.1:9/elsewhere")
    assert jwt.decode(token, options={"verify_signature": False})["aud"] != resource_of(gateway)
    for answer in (
        await api(gateway, "GET", "/api/runs", token),
        await api(gateway, "POST", "/mcp", token, json={}),
    ):
        words = refused(answer, 401, "another audience") and answer.json()["error"]["message"]
        assert f"resource={resource_of(gateway)}" in words


async def test_token_of_another_issuer_with_the_same_key_is_refused(
    gateway: str, providers: tuple[OidcProvider, OidcProvider]
) -> None:
    trusted, other = providers
    token = await other.token("client-ana")
    assert (
        jwt.get_unverified_header(token)["kid"]
        == jwt.get_unverified_header(await trusted.token("client-ana"))["kid"]
    )  # same key: only the issuer tells them apart
    answer = await api(gateway, "GET", "/api/runs", token)
    assert 'error="invalid_token"' in refused(answer, 401, f"not issued by {trusted.issuer}")


async def test_token_with_an_altered_signature_is_refused(
    gateway: str, provider: OidcProvider
) -> None:
    head, body, sig = segments(await provider.token("client-ana"))
    raw = bytearray(unb64(sig))
    raw[-1] ^= 0x01
    answer = await api(gateway, "GET", "/api/runs", f"{head}.{body}.{b64(bytes(raw))}")
    refused(answer, 401, "signature does not verify")
    # and ben's claims under ana's signature
    ben = json.loads(unb64(body)) | {"sub": "client-ben"}
    forged = f"{head}.{b64(json.dumps(ben).encode())}.{sig}"
    refused(await api(gateway, "POST", "/mcp", forged, json={}), 401, "signature")


async def test_token_with_alg_none_is_refused(gateway: str, provider: OidcProvider) -> None:
    _, body, _ = segments(await provider.token("client-ana"))
    head = b64(json.dumps({"alg": "none", "typ": "at+jwt"}).encode())
    for answer in (
        await api(gateway, "GET", "/api/runs", f"{head}.{body}."),
        await api(gateway, "POST", "/mcp", f"{head}.{body}.", json={}),
    ):
        refused(answer, 401, "alg 'none'")


async def test_token_signed_by_a_key_the_issuer_never_had_is_refused(
    gateway: str, provider: OidcProvider
) -> None:
    real = jwt.decode(await provider.token("client-ana"), options={"verify_signature": False})
    rogue = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    token = jwt.encode(real, rogue, algorithm="RS256", headers={"kid": "rogue-kid"})
    answer = await api(gateway, "GET", "/api/runs", token)
    refused(answer, 401, "not among")


async def test_token_of_an_unmapped_subject_is_refused_naming_the_subject(
    gateway: str, provider: OidcProvider
) -> None:
    token = await provider.token("client-carol")
    answer = await api(gateway, "GET", "/api/runs", token)
    message = refused(answer, 401, "is not a blendmesh user") and answer.json()["error"]["message"]
    assert "client-carol" in message and "BLENDMESH_OAUTH_SUBJECTS" in message


@pytest.mark.clause("002-§errors.2")
async def test_token_without_the_required_scope_is_403_insufficient_scope(
    gateway: str, provider: OidcProvider
) -> None:
    token = await provider.token("client-ana", scope=None)
    for answer in (
        await api(gateway, "GET", "/api/runs", token),
        await api(gateway, "POST", "/mcp", token, json={}),
    ):
        challenge = refused(answer, 403, "scope=blendmesh")
        assert 'error="insufficient_scope"' in challenge and 'scope="blendmesh"' in challenge


# -- tenancy -----------------------------------------------------------------------------


@pytest.mark.clause("002-§core-loop.1")
async def test_another_users_token_when_naming_anas_run_and_scene_sees_nothing(
    gateway: str, provider: OidcProvider
) -> None:
    ana, ben = await provider.token("client-ana"), await provider.token("client-ben")
    ran = await api(
        gateway, "POST", "/api/agent/run", ana,
        json={"prompt": "add a cube named Secret", "sceneId": "oauth-private"},
    )  # fmt: skip
    assert ran.status_code == 200, ran.text
    run_id = ran.json()["runId"]
    for path in (f"/api/runs/{run_id}", "/api/scenes/oauth-private"):
        assert (await api(gateway, "GET", path, ana)).status_code == 200
        theirs = await api(gateway, "GET", path, ben)
        unknown = await api(gateway, "GET", path.replace("oauth-private", "nope").replace(
            run_id, "run-00000000000000000000000000000000"), ben)  # fmt: skip
        assert theirs.status_code == unknown.status_code == 404
    listed = await api(gateway, "GET", "/api/runs", ben)
    assert run_id not in {r["runId"] for r in listed.json()["runs"]}
    async with door(gateway, headers=bearer(ben)) as session:
        status = await session.call_tool("run_status", {"run_id": run_id})
        scene = await session.call_tool("scene", {"scene_id": "oauth-private"})
        assert status.isError and scene.isError
        assert (status.structuredContent or {})["error"]["type"] == "NotFound"
        assert (scene.structuredContent or {})["error"]["type"] == "NotFound"
