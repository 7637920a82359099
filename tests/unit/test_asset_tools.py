"""The executor's answers to scene.import_asset and scene.render_view, with a fake bridge
and store: each refusal says what was wrong, and a bridge that dies is the runner's."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from contracts.bridge import INVALID_PARAMS, Preview
from contracts.views import AssetImported, AssetParams, ViewParams
from services.executor.adapters.bridge_client import BridgeCrashed, BridgeError
from services.executor.domain.asset_tools import import_asset, render_view
from services.runtime.nats.objects import ObjectTooLarge
from tests.support.asset_files import glb, gltf_document

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 32


# A fake bridge does its file work as the real one does: in a process of its own, so
# blocking is no loop's concern here.
def read(path: str) -> bytes:
    return Path(path).read_bytes()


def write(path: str, data: bytes) -> None:
    Path(path).write_bytes(data)


def left(folder: Path) -> list[Path]:
    return list(folder.iterdir())


class Staging:
    def __init__(self) -> None:
        self.files: dict[tuple[str, str], bytes] = {}

    async def get(self, user: str, blob: str, max_bytes: int = 1 << 20) -> bytes | None:
        data = self.files.get((user, blob))
        if data is not None and len(data) > max_bytes:
            raise ObjectTooLarge(f"holds {len(data)} bytes, more than the {max_bytes}")
        return data

    async def stage(self, user: str, data: bytes) -> str:
        blob = f"sha256:{hashlib.sha256(data).hexdigest()}"
        self.files[(user, blob)] = data
        return blob


class Bridge:
    """Only what the two tools call; ``fails`` is raised instead of answering."""

    def __init__(self, fails: Exception | None = None) -> None:
        self.fails = fails
        self.seen: list[Any] = []

    async def import_asset(self, asset: AssetParams) -> AssetImported:
        self.seen.append(asset)
        assert read(asset.path)  # a private copy, there while it imports
        if self.fails:
            raise self.fails
        return AssetImported(collection=asset.collection, objects=["Tri"])

    async def render_view(self, view: ViewParams) -> Preview:
        self.seen.append(view)
        if self.fails:
            raise self.fails
        write(view.path, PNG)
        return Preview(path=view.path, width=view.width, height=view.height, engine="CYCLES")


async def staged(staging: Staging, data: bytes, user: str = "ana") -> dict[str, Any]:
    blob = await staging.stage(user, data)
    return {"blob": blob, "bytes": len(data), "format": "glb", "collection": "Props"}


async def test_import_when_staged_imports_a_private_copy_named_for_the_collection(
    tmp_path: Path,
) -> None:
    staging, bridge = Staging(), Bridge()
    args = await staged(staging, glb())
    result = await import_asset(bridge, staging, tmp_path, 1 << 20, "ana", args)  # type: ignore[arg-type]
    assert (
        result.ok
        and result.mutated
        and result.data
        == {
            "collection": "Props",
            "objects": ["Tri"],
            "bytes": len(glb()),
        }
    )
    assert Path(bridge.seen[0].path).name == "Props.glb"
    assert left(tmp_path) == []  # the copy and its folder are gone


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"extra": 1}, "takes"),
        ({"blob": "sha256:nothex"}, "takes"),
        ({"collection": "a/b"}, "no path"),
        ({"bytes": 10**12}, "BLENDMESH_MAX_UPLOAD_BYTES"),
        ({"bytes": 12}, "the plan says 12"),
        ({"blob": "sha256:" + "0" * 64}, "no staged upload"),
    ],
)
async def test_import_when_args_wrong_refuses_before_blender(
    tmp_path: Path, change: dict[str, Any], said: str
) -> None:
    staging, bridge = Staging(), Bridge()
    args = {**await staged(staging, glb()), **change}
    result = await import_asset(bridge, staging, tmp_path, 1 << 20, "ana", args)  # type: ignore[arg-type]
    assert not result.ok and not result.mutated and said in result.message
    assert bridge.seen == []


async def test_import_when_another_users_upload_is_named_finds_none(tmp_path: Path) -> None:
    staging, bridge = Staging(), Bridge()
    args = await staged(staging, glb(), user="ben")
    result = await import_asset(bridge, staging, tmp_path, 1 << 20, "ana", args)  # type: ignore[arg-type]
    assert result.error_code == "not_found" and bridge.seen == []


async def test_import_when_file_points_outside_refuses_before_blender(tmp_path: Path) -> None:
    staging, bridge = Staging(), Bridge()
    args = await staged(staging, glb(gltf_document(buffer_uri="../x.bin")))
    result = await import_asset(bridge, staging, tmp_path, 1 << 20, "ana", args)  # type: ignore[arg-type]
    assert result.error_code == "invalid_input" and "outside it" in result.message
    assert bridge.seen == []


async def test_import_when_blender_cannot_read_it_fails_for_the_checkpoint(
    tmp_path: Path,
) -> None:
    staging = Staging()
    bridge = Bridge(BridgeError("blendmesh/scene.import_asset: Props.glb is broken", -32000))
    args = await staged(staging, glb())
    result = await import_asset(bridge, staging, tmp_path, 1 << 20, "ana", args)  # type: ignore[arg-type]
    assert result.error_code == "invalid_input" and result.mutated  # the runner restores
    assert "Props.glb" not in result.message and "the upload sha256:" in result.message


async def test_import_when_the_bridge_dies_raises_for_the_runner(tmp_path: Path) -> None:
    staging = Staging()
    args = await staged(staging, glb())
    with pytest.raises(BridgeCrashed, match="gone"):
        await import_asset(Bridge(BridgeCrashed("gone")), staging, tmp_path, 1 << 20, "ana", args)  # type: ignore[arg-type]


async def test_view_when_drawn_stages_the_png_for_the_runs_user(tmp_path: Path) -> None:
    staging, bridge = Staging(), Bridge()
    args = {"width": 64, "height": 80, "elevation": 90}
    result = await render_view(bridge, staging, tmp_path, "ana", args)  # type: ignore[arg-type]
    assert result.ok and not result.mutated and result.data is not None
    assert await staging.get("ana", result.data["image"]) == PNG
    assert await staging.get("ben", result.data["image"]) is None
    assert (bridge.seen[0].azimuth, bridge.seen[0].elevation) == (45.0, 90.0)
    assert left(tmp_path) == []


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ({"width": 63, "height": 64}, "width"),
        ({"width": 64}, "(the arguments)"),
        ({"width": 64, "height": 64, "path": "/etc"}, "(the arguments)"),
        ({"width": 64, "height": 64, "camera": "C", "azimuth": 1}, "not both"),
    ],
)
async def test_view_when_args_wrong_refuses_before_blender(
    tmp_path: Path, args: dict[str, Any], said: str
) -> None:
    bridge = Bridge()
    result = await render_view(bridge, Staging(), tmp_path, "ana", args)  # type: ignore[arg-type]
    assert result.error_code == "invalid_input" and said in result.message
    assert bridge.seen == []


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (
            BridgeError("blendmesh/scene.render_view: no camera named 'C'", INVALID_PARAMS),
            "not_found",
        ),
        (BridgeError("blendmesh/scene.render_view: cannot render", -32000), "internal_error"),
    ],
)
async def test_view_when_blender_refuses_names_why(
    tmp_path: Path, error: BridgeError, code: str
) -> None:
    args = {"width": 64, "height": 64, "camera": "C"}
    result = await render_view(Bridge(error), Staging(), tmp_path, "ana", args)  # type: ignore[arg-type]
    assert result.error_code == code and not result.mutated
    assert not result.message.startswith("blendmesh/")
