"""``GET /api/tools`` on a real mesh's NATS holding a published catalog: the core set and
the categories, one category, a search; and what a hostile query gets."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import pytest_asyncio

from services.doors.cli.mesh import Mesh
from services.executor.client import KvCatalog
from services.runtime.nats import access
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.integration.test_gateway_scenes import ANA, client_of
from tests.unit.contracts.test_tool_categories import CATALOG

pytestmark = [pytest.mark.integration]
PREFIX = "bmgtools"


@pytest_asyncio.fixture
async def api(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    settings = Settings(home=tmp_path / "home", prefix=PREFIX, user="ana", previews=False)
    async with Mesh(settings, services=()) as mesh:
        bus = await Bus.open(mesh.url, PREFIX, "gw", mesh.login(access.ADMIN))
        try:
            async with await client_of(settings, bus) as client:
                missing = await client.get("/api/tools", headers=ANA)
                assert missing.status_code == 503, missing.text  # nothing published yet
                assert "retry shortly" in missing.text
                await KvCatalog(bus.js, PREFIX).publish(CATALOG)
                yield client
        finally:
            await bus.close()


async def test_tools_when_asked_bare_by_category_and_by_search_answer_them(
    api: httpx.AsyncClient,
) -> None:
    bare = (await api.get("/api/tools", headers=ANA)).json()
    assert [t["name"] for t in bare["tools"]] == ["object.create"]
    assert {c["category"] for c in bare["categories"]} >= {"modelling", "uv", "shading"}
    uv = (await api.get("/api/tools", params={"category": "uv"}, headers=ANA)).json()
    assert [t["name"] for t in uv["tools"]] == ["uv.unwrap"]
    assert uv["tools"][0]["inputSchema"]["type"] == "object"
    found = await api.get("/api/tools", params={"search": "bevel edges"}, headers=ANA)
    assert found.json()["tools"][0]["name"] == "mesh.bevel"


@pytest.mark.parametrize(
    ("params", "status", "said"),
    [
        ({"category": "../../etc"}, 422, "category"),
        ({"search": "x" * 201}, 422, "search"),
        ({"limit": "100000", "search": "mesh"}, 422, "limit"),
        ({"limit": "many"}, 422, "limit"),
        ({"category": "python"}, 404, "category python has no tools here"),
    ],
)
async def test_tools_when_query_is_hostile_answers_an_error_naming_it(
    api: httpx.AsyncClient, params: dict[str, str], status: int, said: str
) -> None:
    answer = await api.get("/api/tools", params=params, headers=ANA)
    assert answer.status_code == status, answer.text
    assert said in answer.text


async def test_tools_when_no_token_is_401(api: httpx.AsyncClient) -> None:
    assert (await api.get("/api/tools")).status_code == 401
