"""``/api/scenes/{sceneId}/tags`` on a real mesh: the owner tags an existing revision,
lists and removes tags; a missing revision or tag, or another user's scene, is 404."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
import pytest_asyncio

from services.doors.cli.mesh import Mesh
from services.executor.client import KvSceneTags
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.integration.test_gateway_scenes import ANA, BEN, added, client_of
from tests.support.meshes import mesh_fixture

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    # No picture is looked at here: a Blender rendering every commit would only compete
    # with the runs for the CPU, and a stop would wait for its last render.
    return Settings(
        home=tmp_path_factory.mktemp("home"), prefix="bmgtags", user="ana", previews=False
    )


mesh = mesh_fixture(client="test-gateway-tags")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def api(mesh: tuple[Mesh, Bus]) -> AsyncIterator[httpx.AsyncClient]:
    async with await client_of(mesh[0].settings, mesh[1]) as client:
        await added(client, "tagged", "One")
        await added(client, "tagged", "Two", "2 0 1")
        yield client


async def test_tags_when_owner_tags_lists_and_removes_them(
    api: httpx.AsyncClient, mesh: tuple[Mesh, Bus]
) -> None:
    put = await api.put("/api/scenes/tagged/tags/first", json={"revision": 1}, headers=ANA)
    assert put.status_code == 200, put.text
    assert put.json() == {"name": "first", "revision": 1}
    listed = await api.get("/api/scenes/tagged/tags", headers=ANA)
    assert listed.json() == {"sceneId": "tagged", "tags": [{"name": "first", "revision": 1}]}
    assert await KvSceneTags(mesh[1].js, mesh[1].prefix).kept() == {"tagged": {1}}
    gone = await api.put("/api/scenes/tagged/tags/first", json={"revision": None}, headers=ANA)
    assert gone.status_code == 200 and gone.json() == {"name": "first", "revision": None}
    assert (await api.get("/api/scenes/tagged/tags", headers=ANA)).json()["tags"] == []


@pytest.mark.parametrize(
    ("method", "path", "body", "headers", "said"),
    [
        ("PUT", "/api/scenes/tagged/tags/x", {"revision": 99}, ANA, "has no revision 99"),
        ("PUT", "/api/scenes/tagged/tags/x", {"revision": 1}, BEN, "tagged"),  # ana's
        ("PUT", "/api/scenes/tagged/tags/never", {"revision": None}, ANA, "has no tag never"),
        ("GET", "/api/scenes/tagged/tags", None, BEN, "tagged"),
    ],
)
async def test_tags_when_missing_or_not_yours_is_404_saying_what(
    api: httpx.AsyncClient,
    method: str,
    path: str,
    body: dict[str, int | None] | None,
    headers: dict[str, str],
    said: str,
) -> None:
    answer = await api.request(method, path, json=body, headers=headers)
    assert answer.status_code == 404 and said in answer.text


async def test_tag_when_name_or_revision_is_malformed_is_422(api: httpx.AsyncClient) -> None:
    bad_name = await api.put("/api/scenes/tagged/tags/a.b", json={"revision": 1}, headers=ANA)
    assert bad_name.status_code == 422
    bad_revision = await api.put("/api/scenes/tagged/tags/x", json={"revision": 0}, headers=ANA)
    assert bad_revision.status_code == 422
