"""A full store is an error a request hears at once, and freeing space brings the mesh
back with nothing it acknowledged lost (real nats-server, real bpy).

Reproduced with JetStream's own limit, not a small disk: the mesh runs with
``BLENDMESH_MAX_FILE_STORE`` low, and a stream the admin fills stands in for whatever
filled the store (revisions, uploads). That is the state ``services.runtime.service.store_limits``
keeps a real disk in: JetStream refuses writes at its limit instead of stopping when the
disk itself is full. A disk filled past the limit by something else is put in the same
state by ``services.runtime.server.store_guard``; tests/chaos/test_disk_full.py fills a real one.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from nats.js.errors import APIError

from contracts import inspection
from services.doors.cli.common import EXIT_MESH
from services.doors.cli.main import main
from services.doors.cli.mesh import Mesh
from services.doors.core.client import MeshClient
from services.doors.core.requests import build_request
from services.executor.client import SceneFiles
from services.runtime.nats.access import ADMIN
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from services.runtime.service.store_limits import MIB, store_full
from tests.support.meshes import mesh_fixture, role_bus

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

LIMIT = 48  # MiB
FILLER = "FILLER"


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    env = {"BLENDMESH_MAX_FILE_STORE": f"{LIMIT}M"}
    return Settings(
        home=tmp_path_factory.mktemp("home"), prefix="bmfull", user="ana", env=env, previews=False
    )


mesh = mesh_fixture(client="test-full")


def plan(tag: str, name: str) -> dict[str, Any]:
    create = {"primitive": "cube", "name": name, "location": [0, 0, 0]}
    return {
        "request_id": f"req-{tag}",
        "operations": [
            {
                "operation_id": "c1",
                "tool_name": "object.create",
                "args": create,
                "depends_on": [],
                "safety_level": "safe_write",
            }
        ],
    }


async def run(mesh: tuple[Mesh, Bus], tag: str, name: str) -> Any:
    request = build_request(user="ana", scene_id="kept", plan=plan(tag, name), planner="plan")
    return await MeshClient(mesh[1]).run(request, timeout=120)


async def fill(admin: Bus) -> int:
    """Publish to a stream of the admin's until JetStream refuses for lack of storage."""
    await admin.js.add_stream(name=FILLER, subjects=["filler.>"])
    chunk = b"x" * (512 * 1024)
    for sent in range(4 * LIMIT):
        try:
            await admin.js.publish("filler.data", chunk, stream=FILLER)
        except APIError as exc:
            assert store_full(exc), exc
            return sent
    raise AssertionError(f"{4 * LIMIT} half-MiB messages fit a {LIMIT} MiB store")


def cli(mesh: tuple[Mesh, Bus], plan_file: Path) -> int:
    return main(["--home", str(mesh[0].settings.home), "run", "--plan", str(plan_file)])


async def test_store_limit_when_mesh_starts_is_set_and_reported(mesh: tuple[Mesh, Bus]) -> None:
    limits = mesh[0].limits
    assert limits is not None and limits.file_store == LIMIT * MIB
    assert limits.report() == "JetStream may store 48 MiB (BLENDMESH_MAX_FILE_STORE)"


async def test_request_when_store_is_full_fails_at_once_naming_storage_then_space_brings_it_back(
    mesh: tuple[Mesh, Bus],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = await run(mesh, "before", "Kept")
    assert before.status == "completed", before
    async with role_bus(mesh[0], ADMIN) as admin:
        assert await fill(admin) > 0
        plan_file = tmp_path / "plan.json"
        plan_file.write_text(json.dumps(plan("when-full", "Lost")))
        monkeypatch.setenv("NATS_URL", mesh[0].url)
        monkeypatch.setenv("BLENDMESH_PREFIX", mesh[0].settings.prefix)
        monkeypatch.setenv("BLENDMESH_USER", "ana")
        started = time.monotonic()
        code = await asyncio.to_thread(cli, mesh, plan_file)
        took = time.monotonic() - started
        said = capsys.readouterr().err
        assert code == EXIT_MESH, said
        assert "Traceback" not in said and "JetStream's store is full" in said, said
        assert took < 10, took  # at once: not a follower's 600 s, nor a start's 60
        await admin.js.delete_stream(FILLER)  # space freed
    after = await run(mesh, "after", "Later")
    assert after.status == "completed", after
    files = SceneFiles(mesh[1].js, mesh[1].prefix)
    found = await files.revision_inspection("kept")
    assert found is not None and found[0] == 2  # the refused request made no revision
    assert {o.name for o in inspection.decode(found[1]).objects} == {"Kept", "Later"}
