"""Hostile asset files and names: refused with a message naming what is wrong and what to
do, before anything is staged (the doors' check) and again in the executor, for a plan
that names a staged file directly (ADR 0025). A glTF that points at files outside it, an
OBJ with a material library, a USD with an asset path, an FBX whose texture is a path, a
malformed or mislabelled file, a file over the limit, a path for a collection."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from contracts.assets import asset_problem, collection_problem, import_asset_plan
from contracts.receipts import RunResult
from services.doors.cli.mesh import Mesh
from services.doors.core.client import MeshClient
from services.doors.core.requests import build_request
from services.doors.core.scene_client import UploadTooLarge
from services.doors.core.scene_looks import AssetRefused, check_asset
from services.executor.adapters.uploads import ObjectStoreUploads
from services.executor.client import SceneFiles
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.asset_files import (
    OBJ,
    OBJ_WITH_LIBRARY,
    USDA,
    USDA_WITH_REFERENCE,
    glb,
    gltf_document,
    gltf_embedded,
)
from tests.support.bridges import script_result
from tests.support.meshes import mesh_fixture

OUTSIDE = [
    "/etc/passwd",
    "../../secrets/buffer.bin",
    "buffer.bin",
    "https://example.com/buffer.bin",
    "file:///var/lib/blendmesh/other.bin",
    "C:\\Users\\ana\\buffer.bin",
]


@pytest.mark.parametrize("uri", OUTSIDE)
def test_glb_when_buffer_points_outside_is_refused_naming_only_its_last_part(uri: str) -> None:
    problem = asset_problem(glb(gltf_document(buffer_uri=uri)), "glb", "chair.glb")
    assert problem is not None
    assert "refers to files outside it" in problem and "embedded" in problem
    assert "buffer.bin" in problem or "passwd" in problem or "other.bin" in problem
    for folder in ("/etc/", "secrets", "example.com", "/var/lib", "Users"):
        assert folder not in problem


def test_gltf_when_image_points_outside_is_refused() -> None:
    doc = json.loads(gltf_embedded())
    doc["images"] = [{"uri": "/home/ben/private.png"}]
    problem = asset_problem(json.dumps(doc).encode(), "gltf", "chair.gltf")
    assert problem is not None and "'private.png'" in problem and "/home/ben" not in problem


def test_gltf_when_data_uris_only_is_accepted() -> None:
    assert asset_problem(gltf_embedded(), "gltf", "chair.gltf") is None
    assert asset_problem(glb(), "glb", "chair.glb") is None


@pytest.mark.parametrize(
    ("data", "fmt", "said"),
    [
        (b"glTF" + b"\0" * 16, "glb", "malformed .glb"),
        (glb()[:30], "glb", "malformed .glb"),
        (b"not json at all", "gltf", "not JSON"),
        (b'{"buffers": []}', "gltf", "no 'asset' object"),
        (b'{"asset": {}, "buffers": {"uri": 1}}', "gltf", "'buffers' is not a list"),
        (OBJ, "glb", "does not start with 'glTF'"),
        (b"\xff\xfe binary", "obj", "not text"),
        (b"# only a comment\n", "obj", "no vertices"),
        (b"PXR-USDC" + b"\0" * 64, "usda", "export as .usda"),
        (b"random bytes" * 10, "stl", "not an STL mesh"),
        (b"random bytes" * 10, "fbx", "not an FBX file"),
        (b"", "glb", "is empty"),
        (OBJ, "blend", "not a format blendmesh imports"),
    ],
)
def test_asset_when_malformed_or_mislabelled_is_refused(data: bytes, fmt: str, said: str) -> None:
    problem = asset_problem(data, fmt, "the file")
    assert problem is not None and said in problem


def test_obj_and_usd_when_they_refer_to_other_files_are_refused() -> None:
    obj = asset_problem(OBJ_WITH_LIBRARY, "obj", "room.obj")
    usd = asset_problem(USDA_WITH_REFERENCE, "usda", "set.usda")
    assert obj is not None and "material library" in obj and "/etc/" not in obj
    assert usd is not None and "flatten the stage" in usd and "/srv/" not in usd
    assert asset_problem(USDA, "usda", "tri.usda") is None


@pytest.mark.parametrize(
    "name", ["../Props", "a/b", "C:\\temp", "", ".hidden", "Props\0", "x" * 64, "..", " lead"]
)
def test_collection_when_a_path_or_not_a_name_is_refused(name: str) -> None:
    problem = collection_problem(name)
    assert problem is not None and "no path" in problem


@pytest.mark.parametrize("filename", ["chair.blend", "chair.exe", "chair", "chair.glb.zip"])
def test_check_asset_when_wrong_ending_is_refused_naming_the_endings(filename: str) -> None:
    with pytest.raises(AssetRefused) as refused:
        check_asset(glb(), filename, "Props", 1 << 20)
    assert ".glb" in str(refused.value) and ".stl" in str(refused.value)


def test_check_asset_when_over_the_limit_is_refused_naming_the_setting() -> None:
    with pytest.raises(UploadTooLarge) as refused:
        check_asset(glb(), "chair.glb", "Props", 64)
    assert "BLENDMESH_MAX_UPLOAD_BYTES" in str(refused.value)


# -- the executor checks again: a plan that names a staged file directly ----------------


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(
        home=tmp_path_factory.mktemp("home"),
        prefix="bmhostileasset",
        user="ana",
        previews=False,
    )


mesh = mesh_fixture(client="test-hostile-assets")


async def staged_run(bus: Bus, data: bytes, fmt: Any, collection: str = "Props") -> RunResult:
    """Stage ``data`` as ana's and run the import plan naming it, past the doors' checks."""
    blob = await ObjectStoreUploads(bus.js, bus.prefix).stage("ana", data)
    plan = import_asset_plan("req-hostile-" + blob[7:19], blob, len(data), fmt, collection)
    request = build_request(user="ana", scene_id="hostile", plan=plan)
    return await MeshClient(bus).run(request, None, 120)


pytestmark_mesh = pytest.mark.asyncio(loop_scope="module")


@pytestmark_mesh
async def test_executor_when_staged_glb_points_outside_refuses_before_blender_reads_it(
    mesh: tuple[Mesh, Bus],
) -> None:
    result = await staged_run(mesh[1], glb(gltf_document(buffer_uri="/etc/passwd")), "glb")
    assert result.status == "failed" and result.failure is not None
    [receipt] = result.receipts
    assert receipt.status in ("failed", "rolled_back") and receipt.error_code == "invalid_input"
    assert "refers to files outside it" in receipt.message and "/etc/" not in receipt.message
    assert receipt.blender_mutation_id is None  # refused before Blender read a byte


@pytestmark_mesh
async def test_executor_when_plan_names_a_path_for_collection_refuses(
    mesh: tuple[Mesh, Bus],
) -> None:
    result = await staged_run(mesh[1], glb(), "glb", collection="../../etc")
    assert result.status == "failed"
    assert result.failure is not None
    said = " ".join(r.message for r in result.receipts) + result.message
    assert "collection" in said


FBX_WITH_TEXTURE_PATH = """
import json, os, bpy
bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.mesh.primitive_cube_add()
image = bpy.data.images.new("Bark", 4, 4)
image.source = "FILE"
image.filepath = "/srv/textures/bark.png"
material = bpy.data.materials.new("Wood")
material.use_nodes = True
node = material.node_tree.nodes.new("ShaderNodeTexImage")
node.image = image
bsdf = material.node_tree.nodes["Principled BSDF"]
material.node_tree.links.new(node.outputs["Color"], bsdf.inputs["Base Color"])
bpy.context.active_object.data.materials.append(material)
path = os.path.join(folder, "crate.fbx")
bpy.ops.export_scene.fbx(filepath=path, path_mode="ABSOLUTE", embed_textures=False)
print("RESULT " + json.dumps(path))
"""


@pytestmark_mesh
async def test_executor_when_fbx_texture_is_a_path_refuses_and_restores(
    mesh: tuple[Mesh, Bus], tmp_path: Path
) -> None:
    script = f"folder = {str(tmp_path)!r}\n" + FBX_WITH_TEXTURE_PATH
    path, _ = await script_result(script)
    data = await asyncio.to_thread(Path(path).read_bytes)
    assert asset_problem(data, "fbx", "crate.fbx") is None  # only the import shows it
    result = await staged_run(mesh[1], data, "fbx")
    assert result.status == "failed"
    [receipt] = result.receipts
    assert receipt.error_code == "invalid_input"
    assert "bark.png" in receipt.message and "/srv/" not in receipt.message


@pytestmark_mesh
async def test_executor_when_staged_glb_claims_billions_of_vertices_refuses_before_blender(
    mesh: tuple[Mesh, Bus],
) -> None:
    doc = gltf_document()
    doc["accessors"][0]["count"] = 3_000_000_000
    data = glb(doc)
    assert len(data) < 1024
    result = await staged_run(mesh[1], data, "glb")
    assert result.status == "failed" and result.failure is not None
    [receipt] = result.receipts
    assert receipt.error_code == "invalid_input"
    assert "declares 3,000,000,000 elements, more than its buffer view holds" in receipt.message
    assert receipt.blender_mutation_id is None  # refused before Blender read a byte


@pytestmark_mesh
async def test_executor_when_a_first_run_on_a_new_scene_fails_commits_no_revision(
    mesh: tuple[Mesh, Bus],
) -> None:
    bus = mesh[1]
    scenes = SceneFiles(bus.js, bus.prefix)
    # A refused import, and a plan whose one operation fails, each on a scene of its own.
    doc = gltf_document()
    doc["accessors"][0]["count"] = 10**6
    data = glb(doc)
    blob = await ObjectStoreUploads(bus.js, bus.prefix).stage("ana", data)
    imported = import_asset_plan("req-new-import", blob, len(data), "glb", "Props")
    moved = {
        "request_id": "req-new-move",
        "operations": [
            {
                "operation_id": "move",
                "tool_name": "object.transform",
                "args": {"name": "Nobody", "location": [0, 0, 1]},
                "depends_on": [],
                "safety_level": "safe_write",
            }
        ],
    }
    for scene, plan in (("fresh-import", imported), ("fresh-move", moved)):
        request = build_request(user="ana", scene_id=scene, plan=plan)
        result = await MeshClient(bus).run(request, None, 120)
        assert result.status == "failed", result
        assert await scenes.head(scene) is None, f"{scene} got a revision from a failed run"
        assert await scenes.owner(scene) is None
