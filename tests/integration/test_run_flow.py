"""What only the real mesh shows of a run: the saved .blend opens in a fresh Blender with
what the run made, and a committed head gets its preview picture. The flows both buses
share (order of events, rollback, approvals, audit views) are in tests/flows."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from contracts.receipts import RunResult
from services.doors.cli.mesh import Mesh
from services.doors.core.client import MeshClient
from services.doors.core.requests import build_request
from services.executor.adapters.previews import ObjectStorePreviews
from services.executor.domain.preview_worker import PREVIEW_SIZE
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.fresh_bpy import read_with_bpy
from tests.support.meshes import mesh_fixture

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

FLAGSHIP = (
    "add a cube named Box at 0 0 1, add a bevel modifier to Box, "
    "then add a uv sphere named Ball at 3 0 1"
)

INSPECT = """
import json, sys, bpy
bpy.ops.wm.open_mainfile(filepath=sys.argv[1], load_ui=False, use_scripts=False)
out = {o.name: {"location": [round(v, 5) for v in o.location],
                "modifiers": [m.type for m in o.modifiers]} for o in bpy.data.objects}
sys.__stdout__.write("RESULT " + json.dumps(out) + "\\n")
"""


async def inspect_blend(path: str) -> dict[str, Any]:
    """The objects of the .blend at ``path``, read in a fresh bpy process."""
    found: dict[str, Any] = await read_with_bpy(INSPECT, path)
    return found


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(home=tmp_path_factory.mktemp("home"), prefix="bmflow", user="ana")


mesh = mesh_fixture()


async def run(
    mesh: tuple[Mesh, Bus], scene: str, prompt: str | None = None, plan: Any = None, **kw: Any
) -> RunResult:
    request = build_request(user="ana", scene_id=scene, prompt=prompt, plan=plan, **kw)
    return await MeshClient(mesh[1]).run(request, timeout=120)


async def test_flagship_request_when_run_saves_blend_with_box_and_ball(
    mesh: tuple[Mesh, Bus],
) -> None:
    result = await run(mesh, "flagship", FLAGSHIP)
    assert result.status == "completed", result
    assert result.blend_path
    assert await asyncio.to_thread(Path(result.blend_path).exists)
    scene = await inspect_blend(result.blend_path)
    assert scene["Box"] == {"location": [0.0, 0.0, 1.0], "modifiers": ["BEVEL"]}
    assert scene["Ball"]["location"] == [3.0, 0.0, 1.0]


async def test_completed_run_when_committed_stores_preview_png(mesh: tuple[Mesh, Bus]) -> None:
    result = await run(mesh, "pictured", "add a cube named Box")
    assert result.status == "completed", result
    bus = mesh[1]
    previews = ObjectStorePreviews(bus.js, bus.prefix)
    png = None
    # Rendered after the result went out, by a Blender at the lowest CPU priority that
    # may still be starting: on a busy machine that took more than 10 s.
    for _ in range(600):
        png = await previews.get("pictured")
        if png is not None:
            break
        await asyncio.sleep(0.1)
    assert png is not None and png.startswith(b"\x89PNG")
    width, height = PREVIEW_SIZE
    assert png[16:24] == width.to_bytes(4, "big") + height.to_bytes(4, "big")
    assert result.blend_path and Path(result.blend_path).with_suffix(".png").read_bytes() == png
