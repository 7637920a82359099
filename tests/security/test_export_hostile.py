"""The executor's ``scene.export`` fed what a hostile plan tries first: a path of its own,
a format that is a path, extra arguments, the wrong type; and a bridge that refuses or
dies. Nothing reaches the bridge but a fresh file in the work folder, every refusal names
what to send instead, and no file is left behind. (Domain logic: a fake bridge and store.)"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from contracts.bridge import INVALID_PARAMS
from contracts.exports import ExportParams, SceneExported
from services.executor.adapters.bridge_client import BridgeCrashed, BridgeError
from services.executor.domain.export_tools import export_scene

LIMIT = 1 << 20


# A fake bridge does its file work as the real one does: in a process of its own, so
# blocking is no loop's concern here.
def write(path: str, data: bytes) -> None:
    Path(path).write_bytes(data)


def left(folder: Path) -> list[Path]:
    return list(folder.iterdir())


class Staging:
    def __init__(self) -> None:
        self.files: dict[tuple[str, str], bytes] = {}

    async def stage(self, user: str, data: bytes) -> str:
        blob = f"sha256:{hashlib.sha256(data).hexdigest()}"
        self.files[(user, blob)] = data
        return blob


class Bridge:
    """Writes ``data`` where it is told, or raises ``fails``."""

    def __init__(self, data: bytes = b"glTF" + b"\0" * 60, fails: Exception | None = None):
        self.data, self.fails = data, fails
        self.seen: list[ExportParams] = []

    async def export_scene(self, want: ExportParams) -> SceneExported:
        self.seen.append(want)
        if self.fails is not None:
            raise self.fails
        write(want.path, self.data)
        return SceneExported(format=want.format, bytes=len(self.data), objects=2)


@pytest.mark.parametrize(
    "args",
    [
        {"format": "glb", "path": "/etc/passwd"},
        {"format": "../../etc/passwd"},
        {"format": "/tmp/x.glb"},
        {"format": "blend"},
        {"format": ["glb"]},
        {"format": 1e300},
        {},
        {"format": "glb", "max_bytes": 10**12},
    ],
)
async def test_export_when_arguments_are_hostile_refuses_before_the_bridge(
    tmp_path: Path, args: dict[str, Any]
) -> None:
    bridge, staging = Bridge(), Staging()
    result = await export_scene(bridge, staging, tmp_path / "work", LIMIT, "ana", args)
    assert not result.ok and result.error_code == "invalid_input" and not result.mutated
    assert "glb" in (result.message or "") and "stl" in (result.message or "")
    assert bridge.seen == [] and staging.files == {}


async def test_export_when_asked_writes_only_a_fresh_file_in_the_work_folder(
    tmp_path: Path,
) -> None:
    bridge, staging = Bridge(), Staging()
    work = tmp_path / "work"
    result = await export_scene(bridge, staging, work, LIMIT, "ana", {"format": "usd"})
    assert result.ok and result.data is not None and not result.mutated
    [want] = bridge.seen
    assert Path(want.path).parent == work and want.path.endswith(".usdc")
    assert want.max_bytes == LIMIT
    assert left(work) == []  # the written file is staged, then removed
    assert staging.files[("ana", result.data["file"])] == bridge.data
    assert result.data["bytes"] == len(bridge.data) and result.data["format"] == "usd"


async def test_export_when_the_bridge_refuses_says_so_without_the_work_path(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    refusal = BridgeError(
        "blendmesh/scene.export: the scene as glb is 9 bytes, over the 1", INVALID_PARAMS
    )
    result = await export_scene(Bridge(fails=refusal), Staging(), work, 1, "ana", {"format": "glb"})
    assert not result.ok and result.error_code == "invalid_input"
    assert "BLENDMESH_MAX_UPLOAD_BYTES" in (result.message or "")
    assert str(work) not in (result.message or "") and left(work) == []


async def test_export_when_the_bridge_dies_leaves_it_to_the_runner(tmp_path: Path) -> None:
    with pytest.raises(BridgeCrashed):
        await export_scene(
            Bridge(fails=BridgeCrashed("gone")),
            Staging(),
            tmp_path,
            LIMIT,
            "ana",
            {"format": "stl"},
        )
    assert left(tmp_path) == []


def test_formats_when_spelled_by_each_door_are_the_exporters_own() -> None:
    """The gateway's route and the CLI's parser spell the formats without importing the
    contracts' table (a parser imports nothing a command needs): the same five."""
    from typing import get_args

    from contracts.exports import FORMATS
    from services.doors.cli.args import EXPORT_FORMATS
    from services.doors.gateway.scene_exports import Format

    assert set(get_args(Format)) == set(FORMATS) == set(EXPORT_FORMATS)
