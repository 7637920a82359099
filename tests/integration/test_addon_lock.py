"""The add-on's HTTP client locks a scene as a live session, against a real gateway on a
real port and a real log: the lock names the session's artist, another member is refused
naming it, and a non-member's session is told the scene does not exist."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from blendmesh_addon.gateway import Gateway, GatewayError
from services.doors.cli.mesh import Mesh
from services.doors.core.studio import Studio
from services.doors.gateway.app import GatewayServer, create_app
from services.doors.gateway.auth import Tokens
from services.executor.adapters.scene_store import JetStreamSceneStore
from services.executor.client import SceneFiles
from services.runtime.nats import access
from services.runtime.service.host import Bus
from services.runtime.service.projects import projects_of
from services.runtime.service.settings import Settings
from tests.support.meshes import mesh_fixture, role_bus

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(
        home=tmp_path_factory.mktemp("home"), prefix="bmaddonlock", user="lea", previews=False
    )


mesh = mesh_fixture("module", "test-addon-lock", services=())


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def url(
    mesh: tuple[Mesh, Bus], tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[str]:
    """lea's scene ``shot``, filed in project shot010 with ben as its artist."""
    running, bus = mesh
    async with role_bus(running, access.ADMIN) as admin:
        path = Path(tmp_path_factory.mktemp("blend")) / "s.blend"
        path.write_bytes(b"BLENDER" + bytes(1000))
        await JetStreamSceneStore(admin.js, admin.prefix).commit(
            "shot", path, "s" * 16, None, 1, owner="lea"
        )
    studio = Studio(projects_of(bus), SceneFiles(bus.js, bus.prefix), bus.publisher)
    await studio.create("shot010", "lea")
    await studio.add_member("shot010", "ben", "artist", "lea")
    await studio.file_scene("shot010", "shot", "lea")
    tokens = Tokens({"tok-lea": "lea", "tok-ben": "ben", "tok-zed": "zed"})
    server = GatewayServer(create_app(running.settings, bus, tokens, run_timeout=5.0), port=0)
    try:
        yield await server.start()
    finally:
        await server.stop()


async def test_session_when_it_locks_a_scene_holds_it_until_it_releases(url: str) -> None:
    ben, lea = Gateway(url, "tok-ben"), Gateway(url, "tok-lea")
    lock = await asyncio.to_thread(ben.lock, "shot", 600, "posing")
    assert (lock["holder"], lock["heldBy"], lock["note"]) == ("ben", "session", "posing")
    with pytest.raises(GatewayError, match="locked by a live session of ben") as held:
        await asyncio.to_thread(lea.lock, "shot")
    assert held.value.status == 409
    await asyncio.to_thread(ben.unlock, "shot")
    assert (await asyncio.to_thread(lea.lock, "shot", 60))["holder"] == "lea"
    await asyncio.to_thread(lea.unlock, "shot")


async def test_session_of_a_non_member_when_it_locks_is_told_no_such_scene(url: str) -> None:
    with pytest.raises(GatewayError, match=r"no scene shot \(HTTP 404\)"):
        await asyncio.to_thread(Gateway(url, "tok-zed").lock, "shot")
    with pytest.raises(GatewayError, match="not 1-128"):
        await asyncio.to_thread(Gateway(url, "tok-ben").lock, "../etc")
