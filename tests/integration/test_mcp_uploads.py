"""A 20 MB asset through ``/mcp``: too large for one MCP request (1 MiB), it is staged
with ``POST /api/uploads`` and named in ``import_asset``'s ``upload``, on a real mesh and
real Blender. The upload is its user's alone, and every wrong way to name one is refused
saying what to do."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from services.runtime.service.settings import Settings
from tests.support.asset_files import POSITIONS, glb, gltf_document
from tests.support.checked_session import CheckedSession
from tests.support.gateways import gateway_fixture
from tests.support.mcp_plans import error_type, structured
from tests.support.meshes import mesh_fixture

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

TOKENS = {"tok-ana": "ana", "tok-ben": "ben"}
ANA, BEN = ({"Authorization": f"Bearer {t}"} for t in TOKENS)
MAX_UPLOAD = 24 * 1024 * 1024
BIG = 20 * 1024 * 1024


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    home = tmp_path_factory.mktemp("home")
    return Settings(
        home=home, prefix="bmuploads", user="local", max_upload_bytes=MAX_UPLOAD, previews=False
    )


mesh = mesh_fixture(client="test-mcp-uploads")


gateway = gateway_fixture(TOKENS)


@asynccontextmanager
async def door(url: str, headers: dict[str, str]) -> AsyncIterator[ClientSession]:
    async with (
        httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30, read=300)) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write, _),
        CheckedSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def big_glb(size: int = BIG) -> bytes:
    """The triangle, its buffer padded to ``size`` bytes (as a model's textures would)."""
    doc = gltf_document()
    doc["buffers"][0]["byteLength"] = size
    return glb(doc, POSITIONS + bytes(size - len(POSITIONS)))


async def stage(url: str, data: bytes, headers: dict[str, str]) -> httpx.Response:
    async with httpx.AsyncClient(timeout=120) as http:
        return await http.post(f"{url}/api/uploads", content=data, headers=headers)


def importing(scene: str, **source: Any) -> dict[str, Any]:
    return {"scene_id": scene, "filename": "big.glb", "collection": "Props", **source}


async def test_big_asset_when_staged_then_named_imports_through_mcp(gateway: str) -> None:
    data = big_glb()
    staged = await stage(gateway, data, ANA)
    assert staged.status_code == 201, staged.text
    upload = staged.json()
    assert upload["bytes"] == len(data) > BIG and upload["expires_in"] == 86400
    async with door(gateway, ANA) as session:
        answer = await session.call_tool("import_asset", importing("big", upload=upload["blob"]))
    assert not answer.isError, answer.content
    done = structured(answer)
    assert done["status"] == "completed"
    assert done["receipts"][0]["result"]["objects"] == ["Tri"]
    assert done["scene"]["revision"] >= 1


async def test_big_asset_when_sent_inline_is_refused_naming_the_upload_route(
    gateway: str,
) -> None:
    body = {
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "import_asset", "arguments": importing(
            "inline", data=base64.b64encode(big_glb(2 * 1024 * 1024)).decode()
        )},
    }  # fmt: skip
    headers = {**ANA, "Accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient(timeout=60) as http:
        refused = await http.post(f"{gateway}/mcp", json=body, headers=headers)
    assert refused.status_code == 413
    assert "POST /api/uploads" in refused.json()["error"]["message"]


async def test_upload_when_another_user_names_it_answers_as_unknown(gateway: str) -> None:
    staged = (await stage(gateway, big_glb(4096), ANA)).json()
    async with door(gateway, BEN) as session:
        answer = await session.call_tool("import_asset", importing("bens", upload=staged["blob"]))
    assert error_type(answer) == "NotFound"
    assert "no upload" in structured(answer)["error"]["message"]


async def test_upload_when_named_wrongly_is_refused_saying_what_to_give(gateway: str) -> None:
    never = "sha256:" + "0" * 64
    inline = base64.b64encode(glb()).decode()
    async with door(gateway, ANA) as session:
        unknown = await session.call_tool("import_asset", importing("w", upload=never))
        malformed = await session.call_tool("import_asset", importing("w", upload="../etc"))
        both = await session.call_tool("import_asset", importing("w", upload=never, data=inline))
        neither = await session.call_tool("import_asset", importing("w"))
        huge = await session.call_tool(
            "import_asset", importing("w", upload="sha256:" + "a" * 9999)
        )
    assert error_type(unknown) == "NotFound"
    assert "POST /api/uploads" in structured(unknown)["error"]["message"]
    assert error_type(malformed) == "ValidationError" and error_type(huge) == "ValidationError"
    for answer in (both, neither):
        assert error_type(answer) == "ValidationError"
        assert "exactly one of `data`" in structured(answer)["error"]["message"]


async def test_upload_route_when_hostile_refuses_before_storing(gateway: str) -> None:
    anonymous = await stage(gateway, b"x" * 100, {})
    wrong = await stage(gateway, b"x" * 100, {"Authorization": "Bearer nope"})
    empty = await stage(gateway, b"", ANA)
    over = await stage(gateway, bytes(MAX_UPLOAD + 1), ANA)  # refused by its Content-Length
    assert (anonymous.status_code, wrong.status_code) == (401, 401)
    assert empty.status_code == 422 and "empty" in empty.json()["error"]["message"]
    assert over.status_code == 413
    assert "BLENDMESH_MAX_UPLOAD_BYTES" in over.json()["error"]["message"]


async def test_upload_route_when_streamed_past_the_limit_is_refused(gateway: str) -> None:
    async def body() -> AsyncIterator[bytes]:  # chunked: no Content-Length to refuse first
        for _ in range(MAX_UPLOAD // (1024 * 1024) + 2):
            yield bytes(1024 * 1024)

    async with httpx.AsyncClient(timeout=120) as http:
        refused = await http.post(f"{gateway}/api/uploads", content=body(), headers=ANA)
    assert refused.status_code == 413
