"""``blendmesh tools`` against a real mesh's NATS holding a published tool catalog: the
core set and the categories, one category, a search, and what a bad argument gets."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from services.doors.cli import main as cli
from services.doors.cli.mesh import Mesh
from services.executor.client import KvCatalog
from services.runtime.nats import access
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.unit.contracts.test_tool_categories import CATALOG

pytestmark = [pytest.mark.integration]
PREFIX = "bmtools"


@pytest_asyncio.fixture
async def published(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Mesh]:
    """A mesh's NATS alone, with the catalog an executor would have published."""
    settings = Settings(home=tmp_path / "home", prefix=PREFIX, user="ana", previews=False)
    async with Mesh(settings, services=()) as mesh:
        bus = await Bus.open(mesh.url, PREFIX, "seed", mesh.login(access.ADMIN))
        await KvCatalog(bus.js, PREFIX).publish(CATALOG)
        await bus.close()
        monkeypatch.setenv("NATS_URL", mesh.url)
        monkeypatch.setenv("BLENDMESH_PREFIX", PREFIX)
        monkeypatch.setenv("BLENDMESH_USER", "ana")
        yield mesh


async def blendmesh(mesh: Mesh, *args: str) -> int:
    return await asyncio.to_thread(cli.main, ["--home", str(mesh.settings.home), *args])


async def test_tools_when_asked_bare_by_category_and_by_search_find_them(
    published: Mesh, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await blendmesh(published, "tools") == 0
    bare = capsys.readouterr().out
    assert "object.create" in bare and "modelling: mesh.bevel, mesh.extrude" in bare
    assert await blendmesh(published, "tools", "uv", "--json") == 0
    listed = json.loads(capsys.readouterr().out)
    assert [t["name"] for t in listed["tools"]] == ["uv.unwrap"]
    assert listed["tools"][0]["input_schema"]["type"] == "object"
    assert await blendmesh(published, "tools", "--search", "bevel edges", "--json") == 0
    assert json.loads(capsys.readouterr().out)["tools"][0]["name"] == "mesh.bevel"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["../etc"], "no category '../etc'; the categories: animation"),
        (["--search", "x" * 201], "--search takes 1 to 200 characters"),
        (["--limit", "100000", "--search", "mesh"], "--limit takes a number from 1 to 20"),
        (["python"], "category python has no tools here; these do: modelling"),
    ],
)
async def test_tools_when_an_argument_is_bad_says_what_and_exits_two(
    published: Mesh, capsys: pytest.CaptureFixture[str], args: list[str], said: str
) -> None:
    assert await blendmesh(published, "tools", *args) == 2
    assert said in capsys.readouterr().err
