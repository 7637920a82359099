"""A shot's links, against a real bridge: only a link of the one stored form
(``//libraries/<name>@<revision>.blend``) whose file the executor put beside the shot is
followed; a library path with ``..``, an absolute host path, a library nobody supplied (as
another user's library revision is, never being put beside this user's shot), a symlink, a
library that links something itself, a decompression bomb and too many or too large
libraries are refused before Blender reads the file, and the scene stays as it was.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest
import pytest_asyncio
from blender_asset_tracer import blendfile as bat

from contracts.bridge import INVALID_PARAMS
from contracts.views import AssetParams
from services.doors.core import shot_files
from services.executor.adapters.bridge_client import BridgeError, BridgeProcess
from tests.support.asset_files import glb, zstd_blend_bomb
from tests.support.bridges import bridge_fixtures, ok
from tests.support.shot_files import HERO_X, make_shot

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(180),
]

shared_bridge, bridge = bridge_fixtures()
GIB = 1024**3


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def artist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An artist's folder: shot.blend linking lib/Characters.blend and lib/props.blend."""
    return (await make_shot(tmp_path_factory.mktemp("artist"))).parent


def relinked(artist: Path, folder: Path, paths: tuple[str, str]) -> Path:
    """A copy of the shot in ``folder`` whose two links are stored as ``paths``."""
    folder.mkdir(parents=True, exist_ok=True)
    shot = folder / "shot.blend"
    shutil.copyfile(artist / "shot.blend", shot)
    opened = bat.BlendFile(shot, mode="r+b")
    try:
        blocks = sorted(opened.find_blocks_from_code(b"LI"), key=_stored)
        for block, path in zip(blocks, paths, strict=True):
            block[b"name"] = path.encode()
    finally:
        opened.close()
    return shot


def _stored(block: bat.BlendFileBlock) -> bytes:
    value = block[b"name"]
    return value if isinstance(value, bytes) else b""


def shelve(artist: Path, folder: Path, characters: str, props: str) -> None:
    """Put the two libraries in ``folder``/libraries as the executor does."""
    shelf = folder / "libraries"
    shelf.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(artist / "lib" / "Characters.blend", shelf / characters)
    shutil.copyfile(artist / "lib" / "props.blend", shelf / props)


async def refused(bridge: BridgeProcess, path: Path) -> str:
    """The load's refusal, after checking it names no folder of the host and left the
    scene as it was."""
    before = await bridge.fingerprint()
    with pytest.raises(BridgeError) as info:
        await bridge.load(str(path))
    message = str(info.value)
    assert info.value.code == INVALID_PARAMS, message
    assert str(path.parent) not in message and str(path.parent.parent) not in message
    assert await bridge.fingerprint() == before
    return message


async def test_load_when_links_name_the_libraries_beside_it_opens_the_shot_with_its_override(
    bridge: BridgeProcess, artist: Path, tmp_path: Path
) -> None:
    links = ("//libraries/characters@1.blend", "//libraries/props@3.blend")
    shot = relinked(artist, tmp_path, links)
    shelve(artist, tmp_path, "characters@1.blend", "props@3.blend")
    await bridge.load(str(shot))
    data = (await ok(bridge, "scene.snapshot")).data
    assert data is not None
    names = {o["name"] for o in data["objects"]}
    assert {"Ground", "Hero", "Lamp"} <= names
    await ok(bridge, "object.transform", name="Hero", location=[HERO_X + 1, 0, 0])
    saved = tmp_path / "elsewhere" / "saved.blend"
    await bridge.save(str(saved))
    from services.bridge.blendfiles.references import library_paths

    # Saved elsewhere, the links still name the libraries beside the shot, not this folder.
    assert sorted(library_paths(str(saved))) == sorted(links)


async def test_import_asset_when_the_scene_is_a_shot_keeps_its_own_links(
    bridge: BridgeProcess, artist: Path, tmp_path: Path
) -> None:
    links = ("//libraries/characters@1.blend", "//libraries/props@1.blend")
    shot = relinked(artist, tmp_path, links)
    shelve(artist, tmp_path, "characters@1.blend", "props@1.blend")
    await bridge.load(str(shot))
    asset = tmp_path / "crate.glb"
    asset.write_bytes(glb())
    done = await bridge.import_asset(AssetParams(path=str(asset), format="glb", collection="P"))
    assert done.objects  # the shot's own links are not the asset's outside references


@pytest.mark.parametrize(
    ("paths", "shown"),
    [
        (("//libraries/../lib/characters@1.blend", "//libraries/props@1.blend"), "characters@1"),
        (("//../lib/Characters.blend", "//libraries/props@1.blend"), "Characters.blend"),
        (("{lib}/Characters.blend", "//libraries/props@1.blend"), "Characters.blend"),
        (("//libraries/characters.blend", "//libraries/props@1.blend"), "characters.blend"),
        (("//libraries/characters@1.blend/", "//libraries/props@1.blend"), "library"),
        (("//libraries\\characters@1.blend", "//libraries/props@1.blend"), "characters@1"),
    ],
    ids=["dotdot", "relative-outside", "absolute", "unversioned", "trailing-slash", "backslash"],
)
async def test_load_when_a_link_leaves_the_libraries_folder_refuses_it(
    bridge: BridgeProcess, artist: Path, tmp_path: Path, paths: tuple[str, str], shown: str
) -> None:
    resolved = tuple(p.replace("{lib}", str(artist / "lib")) for p in paths)
    shot = relinked(artist, tmp_path / "shot", (resolved[0], resolved[1]))
    shelve(artist, tmp_path / "shot", "characters@1.blend", "props@1.blend")
    (tmp_path / "lib").mkdir()
    shutil.copyfile(artist / "lib" / "Characters.blend", tmp_path / "lib" / "characters@1.blend")
    message = await refused(bridge, shot)
    assert "refers to data outside it" in message and shown in message
    assert "blendmesh scenes import" in message


async def test_load_when_a_linked_revision_was_not_put_beside_it_refuses_it(
    bridge: BridgeProcess, artist: Path, tmp_path: Path
) -> None:
    # Another user's library revision, or one the project lacks, is never put beside the
    # shot: the link names a file that is not there.
    shot = relinked(
        artist, tmp_path, ("//libraries/characters@7.blend", "//libraries/props@1.blend")
    )
    shelve(artist, tmp_path, "characters@1.blend", "props@1.blend")
    message = await refused(bridge, shot)
    assert "library 'Characters.blend' (characters@7.blend)" in message


async def test_load_when_a_library_is_a_symlink_refuses_it(
    bridge: BridgeProcess, artist: Path, tmp_path: Path
) -> None:
    shot = relinked(
        artist, tmp_path, ("//libraries/characters@1.blend", "//libraries/props@1.blend")
    )
    shelve(artist, tmp_path, "characters@9.blend", "props@1.blend")
    os.symlink(artist / "lib" / "Characters.blend", tmp_path / "libraries" / "characters@1.blend")
    message = await refused(bridge, shot)
    assert "(characters@1.blend)" in message


async def test_load_when_a_library_links_another_file_refuses_naming_it(
    bridge: BridgeProcess, artist: Path, tmp_path: Path
) -> None:
    shot = relinked(
        artist, tmp_path, ("//libraries/characters@1.blend", "//libraries/props@1.blend")
    )
    shelve(artist, tmp_path, "characters@1.blend", "props@1.blend")
    # The "library" is itself a shot: it links the artist's files by host paths.
    os.replace(artist / "shot.blend", artist / "shot.keep")
    try:
        shutil.copyfile(artist / "shot.keep", tmp_path / "libraries" / "props@1.blend")
    finally:
        os.replace(artist / "shot.keep", artist / "shot.blend")
    message = await refused(bridge, shot)
    assert "library props@1.blend itself refers to data outside it" in message
    assert str(artist) not in message


async def test_load_when_a_library_is_a_decompression_bomb_refuses_it_without_inflating(
    bridge: BridgeProcess, artist: Path, tmp_path: Path
) -> None:
    shot = relinked(
        artist, tmp_path, ("//libraries/characters@1.blend", "//libraries/props@1.blend")
    )
    shelve(artist, tmp_path, "characters@1.blend", "props@1.blend")
    zstd_blend_bomb(tmp_path / "libraries" / "props@1.blend", 2 * GIB)
    message = await refused(bridge, shot)
    assert "library props@1.blend:" in message and "once decompressed" in message


async def test_gather_when_a_linked_library_is_missing_names_it_and_stages_nothing(
    artist: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "artist"
    await asyncio.to_thread(shutil.copytree, artist, copy)
    characters = str(copy / "lib" / "Characters.blend")
    shot = relinked(artist, copy, (characters, str(copy / "lib" / "gone.blend")))
    with pytest.raises(shot_files.LibraryProblem, match=r"links gone\.blend, which is not at"):
        await asyncio.to_thread(shot_files.gather, shot)
    found = await asyncio.to_thread(
        shot_files.gather, relinked(artist, copy, (characters, characters))
    )
    try:
        assert found.libraries == {"characters": copy / "lib" / "Characters.blend"}
        assert found.file != shot and found.file.name == "shot.blend"
    finally:
        found.close()
    assert found.folder is not None and not found.folder.exists()
