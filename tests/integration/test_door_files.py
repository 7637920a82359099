"""The bus door's files on a real mesh (real nats-server, real bpy): a user's own login
stages an asset, imports it with a plan through ``run.submit``, has a view drawn and
fetches it with ``files.get``; another user's file answers like none, and a file that is
not base64 or too large for one message is refused saying what to do."""

from __future__ import annotations

import base64
import struct
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from contracts.assets import import_asset_plan
from contracts.door import MAX_FILE_CHUNK
from contracts.views import view_plan
from services.doors.cli.mesh import Mesh
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.integration.test_door import PREFIX, User
from tests.support.asset_files import glb
from tests.support.bus_logins import user_login
from tests.support.meshes import mesh_fixture
from tests.support.signing import register

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(
        home=tmp_path_factory.mktemp("home"), prefix=PREFIX, user="alice", previews=False
    )


mesh = mesh_fixture(client="test-door-files")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def users(mesh: tuple[Mesh, Bus], mesh_settings: Settings) -> AsyncIterator[dict[str, User]]:
    out: dict[str, User] = {}
    for name in ("alice", "bob"):
        seed = register(mesh_settings.home, name)
        out[name] = User(name, await user_login(mesh[0].url, seed, name))
    try:
        yield out
    finally:
        for user in out.values():
            await user.nc.close()


def result_of(done: dict[str, Any]) -> dict[str, Any]:
    assert done["type"] == "run.completed", done
    found: dict[str, Any] = done["receipts"][0]["result"]
    return found


async def test_files_when_asset_staged_imported_and_viewed_over_the_bus(
    users: dict[str, User],
) -> None:
    alice, bob = users["alice"], users["bob"]
    data = glb()
    staged = await alice.ask("files.stage", {"data": base64.b64encode(data).decode()})
    assert staged["ok"] is True and staged["size"] == len(data), staged
    plan = import_asset_plan("req-bus-asset", staged["blob"], len(data), "glb", "Props")
    imported = result_of(await alice.run(plan, "busroom"))
    assert imported["objects"] == ["Tri"]
    drawn = result_of(await alice.run(view_plan("req-bus-view", 96, 64, elevation=45), "busroom"))
    image = drawn["image"]
    fetched = await alice.ask("files.get", {"blob": image})
    png = base64.b64decode(fetched["data"])
    assert fetched["size"] == len(png) and fetched.get("next_offset") is None
    assert struct.unpack(">II", png[16:24]) == (96, 64)
    theirs = await bob.ask("files.get", {"blob": image})
    assert theirs["ok"] is False and theirs["error"]["code"] == "NOT_FOUND"


async def test_files_get_when_offset_given_answers_the_rest(users: dict[str, User]) -> None:
    alice = users["alice"]
    data = bytes(range(256)) * 8
    staged = await alice.ask("files.stage", {"data": base64.b64encode(data).decode()})
    rest = await alice.ask("files.get", {"blob": staged["blob"], "offset": 2000})
    assert base64.b64decode(rest["data"]) == data[2000:]


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ({"data": "%%% not base64"}, "not base64"),
        ({"data": base64.b64encode(b"x" * (MAX_FILE_CHUNK + 1)).decode()}, "through the gateway"),
        ({"file": "x"}, "send JSON like"),
    ],
)
async def test_files_stage_when_not_base64_or_too_large_is_refused(
    users: dict[str, User], body: dict[str, Any], said: str
) -> None:
    answer = await users["alice"].ask("files.stage", body)
    assert answer["ok"] is False and answer["error"]["code"] == "INVALID", answer
    assert said in answer["error"]["message"]
