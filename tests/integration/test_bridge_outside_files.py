"""``blendmesh/scene.load`` of a .blend that reaches outside itself, on a real bridge: a
linked library or an external file is refused before Blender opens the file, naming each
by kind and datablock name, never by a host path, and the scene stays as it was.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
import pytest_asyncio
import zstandard

from contracts.bridge import INVALID_PARAMS
from services.bridge.blendfiles.blendfile import read_blocks
from services.executor.adapters.bridge_client import BridgeError, BridgeProcess
from tests.support.bridges import bridge_fixtures, ok
from tests.support.outside_files import REFERENCES, make_files

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(120),
]

shared_bridge, bridge = bridge_fixtures()
SERVER_ERROR = -32000  # the scene may have changed: the executor restores its checkpoint


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def uploads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return await make_files(tmp_path_factory.mktemp("home"))


async def object_names(bridge: BridgeProcess) -> set[str]:
    data = (await ok(bridge, "scene.snapshot")).data
    assert data is not None
    return {o["name"] for o in data["objects"]}


async def refused(bridge: BridgeProcess, path: Path, code: int = INVALID_PARAMS) -> str:
    """The message of the load's refusal, after checking it names no folder of the host."""
    with pytest.raises(BridgeError) as info:
        await bridge.load(str(path))
    message = str(info.value)
    assert info.value.code == code, message
    assert str(path.parent.parent) not in message and "/" not in message.split(": ", 1)[1]
    assert bridge.alive
    return message


async def test_load_when_file_links_another_users_scene_refuses_and_keeps_the_scene(
    bridge: BridgeProcess, uploads: Path
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    before = await bridge.fingerprint()
    message = await refused(bridge, uploads / "linked.blend")
    assert "cannot load 'linked.blend'" in message
    assert "library 'bobprivate.blend' (bobprivate.blend)" in message
    assert "make linked data local" in message
    assert await bridge.fingerprint() == before
    assert await object_names(bridge) == {"Box"}


@pytest.mark.parametrize("name", sorted(REFERENCES))
async def test_load_when_file_refers_to_an_external_file_refuses_naming_it(
    bridge: BridgeProcess, uploads: Path, name: str
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    before = await bridge.fingerprint()
    kind, datablock, file = REFERENCES[name]
    message = await refused(bridge, uploads / name)
    assert f"{kind} {datablock!r} ({file})" in message
    assert "File > External Data > Pack Resources" in message
    assert await bridge.fingerprint() == before


async def test_load_when_image_is_packed_opens_the_file(
    bridge: BridgeProcess, uploads: Path
) -> None:
    await bridge.load(str(uploads / "packed_image.blend"))
    assert await object_names(bridge) == {"Crate"}


async def test_load_when_default_material_recalls_where_it_came_from_opens_the_file(
    bridge: BridgeProcess, uploads: Path
) -> None:
    # Blender lists that path too, though it never reads it: a weak reference.
    await bridge.load(str(uploads / "startup.blend"))
    assert await object_names(bridge) == {"Cube", "Light", "Camera"}


async def test_load_when_a_modifier_reads_an_outside_file_empties_the_scene_and_says_so(
    bridge: BridgeProcess, uploads: Path
) -> None:
    # Only the opened file shows a modifier's path: nothing of the file may stay.
    await ok(bridge, "object.create", primitive="cube", name="Box")
    message = await refused(bridge, uploads / "mesh_cache.blend", SERVER_ERROR)
    assert "file 'secret.pc2'" in message
    assert await object_names(bridge) == set()


async def test_load_when_not_a_readable_blend_refuses_and_keeps_the_scene(
    bridge: BridgeProcess, uploads: Path
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="Box")
    before = await bridge.fingerprint()
    whole = (uploads / "packed_image.blend").read_bytes()
    cases = {
        "notes.blend": (b"just some notes", "it does not start with BLENDER"),
        "cut.blend": (whole[: len(whole) // 2], "it ends before its last block"),
        "garbled.blend": (whole[:4] + b"\xff" * 64, "it cannot be decompressed"),
        "future.blend": (b"BLENDER17-02v0600" + b"\0" * 64, "its block format"),
    }
    for name, (data, why) in cases.items():
        (uploads / name).write_bytes(data)
        message = await refused(bridge, uploads / name)
        assert f"cannot load {name!r}: {why}" in message
    assert await bridge.fingerprint() == before


async def test_load_when_file_missing_names_it_without_its_folder(
    bridge: BridgeProcess, uploads: Path
) -> None:
    message = await refused(bridge, uploads / "missing.blend", SERVER_ERROR)
    assert "cannot load 'missing.blend': no such file" in message


def saved_by_a_newer_blender(source: Path, dest: Path) -> Path:
    """``source`` with the version its GLOB block says a reader needs raised to 9.0."""
    with source.open("rb") as compressed:
        reader = zstandard.ZstdDecompressor().stream_reader(compressed, read_across_frames=True)
        data = bytearray(reader.read())
    dest.write_bytes(data)
    (glob,), sdna = read_blocks(str(dest), lambda code, size: code == b"GLOB")
    field = sdna.field("FileGlobal", "minversion")
    assert field is not None
    struct.pack_into("<h", data, data.index(glob.data) + field.offset, 900)
    dest.write_bytes(data)
    return dest


async def test_load_when_blender_cannot_open_the_file_names_it_without_its_folder(
    bridge: BridgeProcess, uploads: Path
) -> None:
    newer = saved_by_a_newer_blender(uploads / "packed_image.blend", uploads / "newer.blend")
    message = await refused(bridge, newer, SERVER_ERROR)
    assert "cannot load 'newer.blend': " in message and "newer version" in message
