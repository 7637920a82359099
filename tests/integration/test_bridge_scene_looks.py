"""object.inspect, scene.render_view and scene.import_asset on a real Blender bridge: an
object's custom properties bounded, its parent and children, a view that changes nothing
(through a camera or from an angle), an import that keeps its objects in one collection."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from contracts.views import MAX_PROPERTIES, MAX_PROPERTY_CHARS, AssetParams, ViewParams
from services.executor.adapters.bridge_client import BridgeError, BridgeProcess
from tests.support.asset_files import POSITIONS, glb, gltf_document
from tests.support.bridges import bridge_fixtures, call, ok
from tests.support.png import pixels, solid_png

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]
shared_bridge, bridge = bridge_fixtures()


def with_extras(extras: dict[str, object]) -> bytes:
    doc = gltf_document()
    doc["nodes"][0]["extras"] = extras
    return glb(doc)


async def imported(bridge: BridgeProcess, tmp_path: Path, data: bytes, name: str) -> list[str]:
    path = tmp_path / f"{name}.glb"
    path.write_bytes(data)
    done = await bridge.import_asset(AssetParams(path=str(path), format="glb", collection=name))
    return done.objects


async def test_inspect_when_many_and_long_custom_properties_bounds_them(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    extras: dict[str, object] = {f"p{i:03d}": i for i in range(MAX_PROPERTIES + 6)}
    extras["a_long"] = "x" * 1000
    extras["a_nested"] = {"sku": "A-1", "sizes": [1, 2, 3]}
    assert await imported(bridge, tmp_path, with_extras(extras), "Props") == ["Tri"]
    detail = (await ok(bridge, "object.inspect", name="Tri")).data
    assert detail is not None
    props = detail["custom_properties"]
    assert len(props) == MAX_PROPERTIES and detail["more_custom_properties"] == 8
    assert props["a_long"] == "x" * MAX_PROPERTY_CHARS
    assert json.loads(props["a_nested"]) == {"sku": "A-1", "sizes": [1, 2, 3]}
    assert detail["collections"] == ["Props"] and detail["mesh"]["triangles"] == 1
    assert len(json.dumps(detail)) < 64 * 1024  # a receipt, not a dump


async def test_inspect_when_parented_names_parent_and_children(bridge: BridgeProcess) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Table")
    await ok(bridge, "object.create", primitive="cube", name="Cup", location=[0, 0, 2])
    await ok(bridge, "object.parent", child="Cup", parent="Table")
    table = (await ok(bridge, "object.inspect", name="Table")).data
    cup = (await ok(bridge, "object.inspect", name="Cup")).data
    assert table is not None and cup is not None
    assert table["children"] == ["Cup"] and cup["parent"] == "Table"
    assert cup["world_bounds"] == [[-1.0, -1.0, 1.0], [1.0, 1.0, 3.0]]


async def test_inspect_when_no_such_object_fails_not_found(bridge: BridgeProcess) -> None:
    result = await call(bridge, "object.inspect", name="Ghost")
    assert result.error_code == "not_found" and "'Ghost'" in result.message


async def test_view_when_drawn_through_a_camera_or_an_angle_changes_nothing(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    await ok(bridge, "camera.create", name="Cam", location=[0, -8, 2])
    before = await bridge.fingerprint_full()
    through = await bridge.render_view(
        ViewParams(path=str(tmp_path / "cam.png"), width=80, height=64, camera="Cam")
    )
    above = await bridge.render_view(
        ViewParams(path=str(tmp_path / "top.png"), width=64, height=64, elevation=90)
    )
    assert (through.width, through.height, above.width) == (80, 64, 64)
    assert (tmp_path / "cam.png").read_bytes() != (tmp_path / "top.png").read_bytes()
    assert await bridge.fingerprint_full() == before == await bridge.fingerprint()
    with pytest.raises(BridgeError) as refused:
        await bridge.render_view(ViewParams(path=str(tmp_path / "x.png"), camera="Box"))
    assert "no camera named 'Box'" in str(refused.value) and "'Cam'" in str(refused.value)


def _reds(png: bytes) -> int:
    return sum(1 for r, g, b, *_ in pixels(png) if r > 100 and r > 2 * g and r > 2 * b)


def textured_triangle(texture: bytes) -> bytes:
    """The triangle with UVs and a material whose base colour is ``texture``, embedded."""
    uvs = struct.pack("<6f", 0, 0, 1, 0, 0, 1)
    doc = gltf_document()
    views = doc["bufferViews"]
    views.append({"buffer": 0, "byteOffset": len(POSITIONS), "byteLength": len(uvs)})
    views.append({"buffer": 0, "byteOffset": len(POSITIONS) + len(uvs), "byteLength": len(texture)})
    doc["buffers"][0]["byteLength"] = len(POSITIONS) + len(uvs) + len(texture)
    doc["accessors"].append({"bufferView": 1, "componentType": 5126, "count": 3, "type": "VEC2"})
    doc["images"] = [{"bufferView": 2, "mimeType": "image/png"}]
    doc["textures"] = [{"source": 0}]
    doc["materials"] = [{"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}}]
    primitive = doc["meshes"][0]["primitives"][0]
    primitive["attributes"]["TEXCOORD_0"] = 1
    primitive["material"] = 0
    return glb(doc, POSITIONS + uvs + texture)


async def test_view_when_shaded_material_shows_the_texture_solid_does_not(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    # A textured import leaves the viewport colour white: Workbench's solid colours show
    # a plain model, and a model that just set a texture must see it.
    await imported(bridge, tmp_path, textured_triangle(solid_png(8, 8, (230, 10, 10))), "Red")
    before = await bridge.fingerprint_full()
    shots = {}
    for shading in ("material", "solid", "rendered"):
        path = tmp_path / f"{shading}.png"
        view = ViewParams(
            path=str(path), width=96, height=96, azimuth=0, elevation=0, shading=shading
        )
        shots[shading] = (await bridge.render_view(view)).engine, _reds(path.read_bytes())
    assert shots["material"][0] == "BLENDER_WORKBENCH" and shots["material"][1] > 500
    assert shots["solid"] == ("BLENDER_WORKBENCH", 0)
    assert shots["rendered"][0] == "CYCLES" and shots["rendered"][1] > 500
    assert await bridge.fingerprint_full() == before  # nothing the render touched stays


async def test_import_when_a_texture_points_outside_refuses(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    # Past the door's check (a glTF image by path): the import itself must refuse it.
    doc = gltf_document()
    doc["images"] = [{"uri": "/srv/textures/bark.png"}]
    doc["textures"] = [{"source": 0}]
    doc["materials"] = [{"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}}]
    doc["meshes"][0]["primitives"][0]["material"] = 0
    with pytest.raises(BridgeError) as refused:
        await imported(bridge, tmp_path, glb(doc), "Bark")
    assert "bark.png" in str(refused.value) and "/srv/" not in str(refused.value)
