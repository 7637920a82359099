"""``scene.import`` when the bridge will not open the upload: a refusal before the scene
was touched leaves it as it was, a failed open asks for the checkpoint back, and neither
message shows where the executor kept its private copy."""

from __future__ import annotations

from pathlib import Path
from typing import Any, BinaryIO

from contracts.bridge import INVALID_PARAMS
from contracts.scene_files import blob_id
from contracts.scenes import Head
from services.executor.adapters.bridge_client import BridgeError
from services.executor.domain.scene_tools import SceneTools
from services.runtime.nats.objects import ObjectTooLarge

DATA = b"BLENDER17-01v0500" + b"\0" * 64
BLOB = blob_id(DATA)


class Uploads:
    async def get(self, user: str, blob: str, max_bytes: int) -> bytes | None:
        raise AssertionError("an import streams its upload to a file: it never gets it")

    async def fetch(self, user: str, blob: str, dest: BinaryIO, max_bytes: int) -> bool:
        if (user, blob) != ("ana", BLOB):
            return False
        if len(DATA) > max_bytes:  # as the store refuses it, before writing a byte
            raise ObjectTooLarge(f"holds {len(DATA)} bytes, more than the {max_bytes}")
        dest.write(DATA)
        return True


class NoRevisions:
    async def find_revision(self, scene_id: str, revision: int) -> Head | None:
        return None

    async def fetch(self, head: Head, dest: Path) -> None:
        raise AssertionError("no revision is read by an import")


class RefusingBridge:
    """Answers ``load`` as the real bridge does when it will not open a file: naming the
    file by its last part only."""

    def __init__(self, code: int, why: str) -> None:
        self.code, self.why = code, why
        self.loaded: list[Path] = []

    async def load(self, path: str) -> str:
        self.loaded.append(Path(path))
        name = Path(path).name
        raise BridgeError(f"blendmesh/scene.load: cannot load {name!r}: {self.why}", self.code)


def left(folder: Path) -> list[Path]:
    """What an import left in its work folder: nothing, once it is over."""
    return list(folder.iterdir())


async def imported(bridge: RefusingBridge, work_dir: Path, size: int = len(DATA)) -> Any:
    tools = SceneTools(NoRevisions(), Uploads(), work_dir, max_upload_bytes=1024)
    bound = tools.bind(bridge, "room", "ana")  # type: ignore[arg-type]
    return await bound.call_tool("scene.import", {"blob": BLOB, "bytes": size}, "c1")


async def test_import_when_the_upload_is_larger_than_the_plan_says_is_refused_unread(
    tmp_path: Path,
) -> None:
    bridge = RefusingBridge(INVALID_PARAMS, "not reached")
    result = await imported(bridge, tmp_path, size=len(DATA) - 1)
    assert not result.ok and result.error_code == "invalid_input" and not result.mutated
    assert result.message == f"the upload holds more bytes than the plan says {len(DATA) - 1}"
    assert bridge.loaded == [] and left(tmp_path) == []


async def test_import_when_the_upload_is_smaller_than_the_plan_says_is_refused(
    tmp_path: Path,
) -> None:
    bridge = RefusingBridge(INVALID_PARAMS, "not reached")
    result = await imported(bridge, tmp_path, size=len(DATA) + 1)
    assert not result.ok and result.error_code == "invalid_input" and not result.mutated
    assert result.message == f"the upload holds {len(DATA)} bytes, the plan says {len(DATA) + 1}"
    assert bridge.loaded == [] and left(tmp_path) == []


async def test_import_when_no_upload_of_the_user_is_not_found_and_leaves_no_file(
    tmp_path: Path,
) -> None:
    tools = SceneTools(NoRevisions(), Uploads(), tmp_path, max_upload_bytes=1024)
    bound = tools.bind(RefusingBridge(INVALID_PARAMS, "x"), "room", "bob")  # type: ignore[arg-type]
    result = await bound.call_tool("scene.import", {"blob": BLOB, "bytes": len(DATA)}, "c1")
    assert not result.ok and result.error_code == "not_found" and "of bob" in result.message
    assert left(tmp_path) == []


async def test_import_when_bridge_refuses_the_file_fails_unchanged_naming_the_upload(
    tmp_path: Path,
) -> None:
    why = "it refers to data outside it, which blendmesh does not read: library 'b.blend'"
    bridge = RefusingBridge(INVALID_PARAMS, why)
    result = await imported(bridge, tmp_path)
    assert not result.ok and result.error_code == "invalid_input" and not result.mutated
    assert result.message == f"cannot load the upload {BLOB[:19]}…: {why}"
    assert bridge.loaded[0].parent == tmp_path and not bridge.loaded[0].exists()


async def test_import_when_blender_fails_to_open_asks_for_the_checkpoint_back(
    tmp_path: Path,
) -> None:
    bridge = RefusingBridge(-32000, "Error: the file was saved by a newer version")
    result = await imported(bridge, tmp_path)
    assert not result.ok and result.error_code == "invalid_input" and result.mutated
    assert result.message == (
        f"Blender could not open the upload {BLOB[:19]}…: cannot load the upload "
        f"{BLOB[:19]}…: Error: the file was saved by a newer version"
    )
    assert bridge.loaded[0].name not in result.message and str(tmp_path) not in result.message
