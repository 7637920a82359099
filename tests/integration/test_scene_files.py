"""Scenes a user owns, through the whole mesh (real nats-server, real bpy): import, revert,
history, ownership, and the guard that keeps a hand-edited exported file."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from contracts import inspection
from contracts.receipts import RunResult
from contracts.scene_files import import_plan, revert_plan
from services.doors.cli.mesh import Mesh
from services.doors.core.client import ClientError, MeshClient
from services.doors.core.requests import build_request
from services.doors.core.scene_client import (
    NoScene,
    NotABlend,
    SceneDoor,
    SceneFileChanged,
    UploadTooLarge,
    exported,
    guard_export,
)
from services.executor.client import SceneFiles
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.meshes import mesh_fixture

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

MAKE_BLEND = """
import sys, bpy
source, dest, name = sys.argv[1:4]
if source == "-":
    bpy.ops.wm.read_factory_settings(use_empty=True)
else:
    bpy.ops.wm.open_mainfile(filepath=source, load_ui=False, use_scripts=False)
bpy.ops.mesh.primitive_cone_add(location=(0, 0, 2))
bpy.context.active_object.name = name
bpy.ops.wm.save_as_mainfile(filepath=dest, compress=True)
"""


LINK_BLEND = """
import sys, bpy
library, dest = sys.argv[1:3]
bpy.ops.wm.read_factory_settings(use_empty=True)
with bpy.data.libraries.load(library, link=True) as (found, to):
    to.objects = list(found.objects)
for linked in to.objects:
    bpy.context.scene.collection.objects.link(linked)
bpy.ops.wm.save_as_mainfile(filepath=dest, relative_remap=False)
"""


async def blender(script: str, *args: str) -> None:
    """Run ``script`` in a fresh bpy process: the test process never imports bpy, and the
    mesh shares this event loop."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        script,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    assert proc.returncode == 0, err.decode(errors="replace")


async def blend_with_cone(source: Path | None, dest: Path, name: str = "Cone") -> Path:
    """A .blend saved by Blender, as an artist would."""
    await blender(MAKE_BLEND, str(source) if source else "-", str(dest), name)
    return dest


async def blend_linking(library: Path, dest: Path) -> Path:
    """A .blend whose scene links every object of ``library`` (by its absolute path)."""
    await blender(LINK_BLEND, str(library), str(dest))
    return dest


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    # No picture is looked at here: a Blender rendering every commit would only compete
    # with the runs for the CPU, and a stop would wait for its last render.
    return Settings(
        home=tmp_path_factory.mktemp("home"), prefix="bmscenes", user="ana", previews=False
    )


mesh = mesh_fixture()


def door(mesh: tuple[Mesh, Bus], settings: Settings | None = None) -> SceneDoor:
    return SceneDoor(mesh[1], settings or mesh[0].settings)


async def approved(mesh: tuple[Mesh, Bus], result: RunResult, user: str = "ana") -> RunResult:
    assert result.status == "awaiting_confirmation", result
    return await MeshClient(mesh[1]).resolve(result.run_id, "approve_once", user, timeout=120)


async def objects(mesh: tuple[Mesh, Bus], scene: str) -> set[str]:
    found = await SceneFiles(mesh[1].js, mesh[1].prefix).revision_inspection(scene)
    assert found is not None
    return {o.name for o in inspection.decode(found[1]).objects}


async def run_prompt(mesh: tuple[Mesh, Bus], scene: str, prompt: str, user: str = "ana") -> Any:
    request = build_request(user=user, scene_id=scene, prompt=prompt)
    return await MeshClient(mesh[1]).run(request, timeout=120)


async def test_import_when_new_scene_runs_unasked_then_later_runs_build_on_it(
    mesh: tuple[Mesh, Bus], tmp_path: Path
) -> None:
    data = (await blend_with_cone(None, tmp_path / "imported.blend")).read_bytes()
    request = await door(mesh).import_request("ana", "imported", data, "imported.blend")
    result = await MeshClient(mesh[1]).run(request, timeout=120)  # it replaces nothing
    assert result.status == "completed", result
    head = await door(mesh).own("imported", "ana")
    assert head.revision == 1 and head.owner == "ana"
    assert "Cone" in await objects(mesh, "imported")
    again = await door(mesh).import_request("ana", "imported", data, "imported.blend")
    replacing = await MeshClient(mesh[1]).run(again, timeout=120)
    assert replacing.status == "awaiting_confirmation", replacing  # it would replace revision 1
    await MeshClient(mesh[1]).resolve(replacing.run_id, "reject", "ana", timeout=120)

    after = await run_prompt(mesh, "imported", "add a cube named Box at 0 0 1")
    assert after.status == "completed", after
    assert {"Cone", "Box"} <= await objects(mesh, "imported")
    history = await door(mesh).history("imported", "ana")
    assert [e.revision for e in history] == [1, 2]
    assert history[0].run_id == result.run_id and history[0].tools == ["scene.import"]
    assert history[0].approved_by == "policy"
    assert history[1].run_id == after.run_id and history[1].user == "ana"
    listed = {row["scene_id"]: row for row in await door(mesh).scenes("ana")}
    assert listed["imported"]["revision"] == 2 and listed["imported"]["changed_by"] == "ana"
    summary = await door(mesh).show("imported", "ana")
    assert {o["name"] for o in summary["objects"]} >= {"Cone", "Box"}
    assert summary["types"]["MESH"] >= 2


async def test_import_when_file_links_another_users_scene_refuses_and_shows_nothing_of_it(
    mesh: tuple[Mesh, Bus], tmp_path: Path
) -> None:
    settings = mesh[0].settings
    bens = await run_prompt(mesh, "bobprivate", "add a cube named BobSecretPlans", user="ben")
    assert bens.status == "completed", bens
    library = exported(settings).path("bobprivate")  # ben's scene, on the host's disk
    await run_prompt(mesh, "aliceimp", "add a cube named Box at 0 0 1")
    data = (await blend_linking(library, tmp_path / "plans.blend")).read_bytes()
    request = await door(mesh).import_request("ana", "aliceimp", data, "plans.blend")
    result = await approved(mesh, await MeshClient(mesh[1]).run(request, timeout=120))
    assert result.status == "failed", result
    message = result.message or ""
    assert "cannot load the upload sha256:" in message
    assert "library 'bobprivate.blend' (bobprivate.blend)" in message
    assert str(settings.home) not in message and str(tmp_path) not in message
    head = await SceneFiles(mesh[1].js, mesh[1].prefix).head("aliceimp")
    assert head is not None and head.revision == 1
    assert await objects(mesh, "aliceimp") == {"Box"}
    shown = await door(mesh).show("aliceimp", "ana")
    assert {o["name"] for o in shown["objects"]} == {"Box"}


async def test_import_when_file_is_not_a_blend_refuses_and_stages_nothing(
    mesh: tuple[Mesh, Bus],
) -> None:
    with pytest.raises(NotABlend, match=r"notes\.txt is not a \.blend file"):
        await door(mesh).import_request("ana", "texts", b"hello, not blender", "notes.txt")
    with pytest.raises(NotABlend, match="empty"):
        await door(mesh).import_request("ana", "texts", b"", "empty.blend")
    assert await SceneFiles(mesh[1].js, mesh[1].prefix).head("texts") is None


async def test_import_when_file_is_over_the_limit_names_the_setting(
    mesh: tuple[Mesh, Bus],
) -> None:
    small = mesh[0].settings.with_(max_upload_bytes=16)
    with pytest.raises(UploadTooLarge, match="BLENDMESH_MAX_UPLOAD_BYTES"):
        await door(mesh, small).import_request("ana", "big", b"BLENDER" + b"x" * 32, "big.blend")
    assert await SceneFiles(mesh[1].js, mesh[1].prefix).head("big") is None


async def test_revert_when_approved_makes_head_equal_the_revision(
    mesh: tuple[Mesh, Bus],
) -> None:
    first = await run_prompt(mesh, "rev", "add a cube named Box at 0 0 1")
    second = await run_prompt(mesh, "rev", "add a uv sphere named Ball at 3 0 1")
    assert first.status == second.status == "completed"
    files = SceneFiles(mesh[1].js, mesh[1].prefix)
    one = await files.revision_inspection("rev", 1)
    assert one is not None
    wanted = inspection.decode(one[1]).scene_hash

    request = await door(mesh).revert_request("ana", "rev", 1)
    asked = await MeshClient(mesh[1]).run(request, timeout=120)
    assert asked.status == "awaiting_confirmation"  # destructive: a person decides
    done = await approved(mesh, asked)
    assert done.status == "completed", done
    head = await files.head("rev")
    assert head is not None and head.revision == 3 and head.scene_hash == wanted
    assert await objects(mesh, "rev") == {"Box"}
    history = await door(mesh).history("rev", "ana")
    assert [(e.revision, e.run_id) for e in history] == [
        (1, first.run_id),
        (2, second.run_id),
        (3, done.run_id),
    ]


async def test_revert_when_revision_unknown_says_where_to_look(mesh: tuple[Mesh, Bus]) -> None:
    await run_prompt(mesh, "norev", "add a cube named Box at 0 0 1")
    with pytest.raises(ClientError, match=r"no revision 9.*scenes history norev"):
        await door(mesh).revert_request("ana", "norev", 9)


async def test_scene_tools_when_plan_names_bad_input_fail_and_change_nothing(
    mesh: tuple[Mesh, Bus],
) -> None:
    await run_prompt(mesh, "tools", "add a cube named Box at 0 0 1")
    missing = import_plan("req-missing-upload", "sha256:" + "ab" * 32, 100)
    far = revert_plan("req-far-revision", 7)
    for plan, message in ((missing, "no staged upload"), (far, "has no revision 7")):
        request = build_request(user="ana", scene_id="tools", plan=plan, pre_approved=True)
        result = await MeshClient(mesh[1]).run(request, timeout=120)
        assert result.status == "failed", result
        assert message in (result.message or ""), result
    head = await SceneFiles(mesh[1].js, mesh[1].prefix).head("tools")
    assert head is not None and head.revision == 1


async def test_another_user_cannot_see_import_into_or_revert_a_scene(
    mesh: tuple[Mesh, Bus], tmp_path: Path
) -> None:
    await run_prompt(mesh, "anas", "add a cube named Box at 0 0 1")
    data = (await blend_with_cone(None, tmp_path / "bens.blend")).read_bytes()
    theirs = door(mesh)
    with pytest.raises(NoScene):
        await theirs.import_request("ben", "anas", data, "bens.blend")
    with pytest.raises(NoScene):
        await theirs.revert_request("ben", "anas", 1)
    with pytest.raises(NoScene):
        await theirs.show("anas", "ben")
    with pytest.raises(NoScene):
        await theirs.history("anas", "ben")
    assert "anas" not in {row["scene_id"] for row in await theirs.scenes("ben")}
    head = await SceneFiles(mesh[1].js, mesh[1].prefix).head("anas")
    assert head is not None and head.revision == 1


async def test_hand_edited_export_when_no_choice_stops_with_both_ways_out(
    mesh: tuple[Mesh, Bus],
) -> None:
    settings = mesh[0].settings
    await run_prompt(mesh, "edited", "add a cube named Box at 0 0 1")
    assert guard_export(settings, "edited", None) is False  # as blendmesh wrote it
    path = exported(settings).path("edited")
    await blend_with_cone(path, path, "HandCone")  # the artist saves over the export
    with pytest.raises(SceneFileChanged) as refused:
        guard_export(settings, "edited", None)
    assert "--adopt" in str(refused.value) and "--discard" in str(refused.value)
    assert refused.value.path == path


async def test_adopt_when_file_was_edited_keeps_the_hand_made_object(
    mesh: tuple[Mesh, Bus],
) -> None:
    settings = mesh[0].settings
    await run_prompt(mesh, "adopted", "add a cube named Box at 0 0 1")
    path = exported(settings).path("adopted")
    await blend_with_cone(path, path, "HandCone")
    assert guard_export(settings, "adopted", "adopt") is True
    request = await door(mesh).import_request(
        "ana", "adopted", path.read_bytes(), path.name, pre_approved=True
    )
    assert (await MeshClient(mesh[1]).run(request, timeout=120)).status == "completed"
    after = await run_prompt(mesh, "adopted", "add a uv sphere named Ball at 3 0 1")
    assert after.status == "completed", after
    assert {"Box", "HandCone", "Ball"} <= await objects(mesh, "adopted")
    assert guard_export(settings, "adopted", None) is False  # blendmesh wrote it again


async def test_discard_when_file_was_edited_keeps_a_backup_beside_it(
    mesh: tuple[Mesh, Bus],
) -> None:
    settings = mesh[0].settings
    await run_prompt(mesh, "discarded", "add a cube named Box at 0 0 1")
    path = exported(settings).path("discarded")
    await blend_with_cone(path, path, "HandCone")
    edited = path.read_bytes()
    assert guard_export(settings, "discarded", "discard") is False
    backups = list(path.parent.glob("discarded.blend.bak-*"))
    assert len(backups) == 1 and backups[0].read_bytes() == edited
    after = await run_prompt(mesh, "discarded", "add a uv sphere named Ball at 3 0 1")
    assert after.status == "completed", after
    assert "HandCone" not in await objects(mesh, "discarded")
    assert path.read_bytes() != edited and backups[0].read_bytes() == edited


async def test_export_put_there_by_hand_when_no_choice_is_refused(
    mesh: tuple[Mesh, Bus], tmp_path: Path
) -> None:
    settings = mesh[0].settings
    path = exported(settings).path("byhand")
    path.parent.mkdir(parents=True, exist_ok=True)
    await blend_with_cone(None, path)
    with pytest.raises(SceneFileChanged, match=r"byhand\.blend"):
        guard_export(settings, "byhand", None)
