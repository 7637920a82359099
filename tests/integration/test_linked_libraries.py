"""A studio's shot through the whole mesh (real nats-server, real bpy): it links a character
from one library (with a library override) and a prop from another; it imports with its
libraries, edits (its overridden location among them), reverts and downloads with its links
intact and resolvable, and the executor puts exactly the named library revisions beside it.
"""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path
from typing import Any

import pytest

from contracts import inspection as artifacts
from contracts.change_text import change_lines
from contracts.libraries import publish_plan, update_plan
from contracts.receipts import RunResult
from contracts.scene_files import import_plan
from services.bridge.blendfiles.references import library_paths
from services.doors.cli.mesh import Mesh
from services.doors.core import shot_files
from services.doors.core.client import MeshClient
from services.doors.core.library_client import LibraryDoor, NotALibrary
from services.doors.core.requests import build_request
from services.doors.core.reviews import Revisions
from services.doors.core.scene_client import NoScene, NotABlend, SceneDoor
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.meshes import mesh_fixture
from tests.support.shot_files import HERO_X, make_shot, opened

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(600),
]

LINKS = ["//libraries/characters@1.blend", "//libraries/props@1.blend"]


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    # Previews on: the preview's own Blender loads the shot too, beside its libraries.
    # One Blender for runs: the tests read which revision it loaded beside which libraries,
    # and a second would keep a shot warm that the first loads from the store.
    home = tmp_path_factory.mktemp("home")
    return Settings(home=home, prefix="bmshots", user="ana", bridges=1)


mesh = mesh_fixture()


def door(mesh: tuple[Mesh, Bus]) -> SceneDoor:
    return SceneDoor(mesh[1], mesh[0].settings)


async def run(mesh: tuple[Mesh, Bus], request: Any, user: str = "ana") -> RunResult:
    result = await MeshClient(mesh[1]).run(request, timeout=180)
    if result.status == "awaiting_confirmation":
        result = await MeshClient(mesh[1]).resolve(result.run_id, "approve_once", user, timeout=180)
    return result


async def import_shot(mesh: tuple[Mesh, Bus], scene: str, path: Path, user: str = "ana") -> Any:
    shot = shot_files.gather(path)
    try:
        with shot.file.open("rb") as file:
            request = await door(mesh).import_request(
                user, scene, file, path.name, libraries=shot.libraries
            )
    finally:
        shot.close()
    return await run(mesh, request)


def shelved(mesh: tuple[Mesh, Bus], beside: str = "imports") -> dict[str, int]:
    """The files in the ``libraries`` folder beside the files the executor loads from
    ``beside``, with their modes: what Blender could read next to the last one it loaded."""
    # Each of the executor's Blenders loads in a folder of its own: the last one filled.
    folders = list(mesh[0].settings.work_dir.glob(f"**/{beside}/libraries"))
    if not folders:
        return {}
    folder = max(folders, key=lambda f: f.stat().st_mtime_ns)
    return {file.name: stat.S_IMODE(file.stat().st_mode) for file in folder.iterdir()}


async def downloaded(mesh: tuple[Mesh, Bus], scene: str, to: Path, revision: int) -> Any:
    written = await door(mesh).download(scene, "ana", to, revision)
    assert written[0] == to / f"{scene}.blend"
    return await opened(written[0])


def hero(found: dict[str, Any]) -> list[Any]:
    return next(o for o in found["objects"] if o[0] == "Hero" and o[2])


async def test_shot_when_imported_edited_reverted_and_downloaded_keeps_its_links(
    mesh: tuple[Mesh, Bus], tmp_path: Path
) -> None:
    shot = await make_shot(tmp_path / "artist")
    imported = await import_shot(mesh, "shot", shot)
    assert imported.status == "completed", imported
    head = await door(mesh).own("shot", "ana")
    stored = tmp_path / "stored.blend"
    stored.write_bytes(await door(mesh).files.blend(head))
    assert sorted(library_paths(str(stored))) == LINKS  # project-relative, revision named
    # Exactly the two named revisions, read-only, beside the revision Blender loaded.
    assert shelved(mesh) == {"characters@1.blend": 0o444, "props@1.blend": 0o444}

    moved = build_request(
        user="ana",
        scene_id="shot",
        plan={
            "request_id": "req-move-hero",
            "operations": [
                {
                    "operation_id": "move",
                    "tool_name": "object.transform",
                    "args": {"name": "Hero", "location": [4.0, 1.0, 0.0]},
                    "depends_on": [],
                    "safety_level": "safe_write",
                }
            ],
        },
    )
    edited = await run(mesh, moved)
    assert edited.status == "completed", edited
    reverted = await run(mesh, await door(mesh).revert_request("ana", "shot", 1, pre_approved=True))
    assert reverted.status == "completed", reverted
    assert (await door(mesh).own("shot", "ana")).revision == 3

    for revision, x in ((2, 4.0), (3, HERO_X)):
        found = await downloaded(mesh, "shot", tmp_path / f"r{revision}", revision)
        assert sorted(path for path, _, _ in found["libraries"]) == LINKS
        assert not any(missing for _, missing, _ in found["libraries"]), found
        assert hero(found)[3] == x  # the override's location is the shot's, as edited
        linked = {o[0]: o[1] for o in found["objects"] if o[1]}
        assert linked == {"Hero": LINKS[0], "Lamp": LINKS[1]}
        lamp = next(o for o in found["objects"] if o[0] == "Lamp")
        assert lamp[4] > 100  # the prop's mesh, read from its library
    assert shelved(mesh) == {"characters@1.blend": 0o444, "props@1.blend": 0o444}


async def stored_links(mesh: tuple[Mesh, Bus], scene: str, to: Path) -> list[str]:
    head = await door(mesh).own(scene, "ana")
    await asyncio.to_thread(to.write_bytes, await door(mesh).files.blend(head))
    return sorted(library_paths(str(to)))


async def test_import_when_a_library_changes_publishes_a_new_revision_the_shot_links(
    mesh: tuple[Mesh, Bus], tmp_path: Path
) -> None:
    first = await import_shot(mesh, "shot2", await make_shot(tmp_path / "a"))
    assert first.status == "completed", first
    before = await stored_links(mesh, "shot2", tmp_path / "before.blend")
    shot = await make_shot(tmp_path / "b", hero_x=1.0)  # the library saved again: new bytes
    (tmp_path / "b" / "lib" / "props.blend").write_bytes(
        (tmp_path / "a" / "lib" / "props.blend").read_bytes()
    )
    second = await import_shot(mesh, "shot2", shot)
    assert second.status == "completed", second
    after = await stored_links(mesh, "shot2", tmp_path / "after.blend")
    # The same props bytes publish nothing new; the character library, saved again, does.
    assert after[1] == before[1]
    name, revision = before[0].removesuffix(".blend").split("@")
    assert after[0] == f"{name}@{int(revision) + 1}.blend"
    head = await door(mesh).own("shot2", "ana")
    found = await downloaded(mesh, "shot2", tmp_path / "down", head.revision)
    assert hero(found)[3] == 1.0 and not any(m for _, m, _ in found["libraries"])


async def test_preview_when_shot_links_libraries_pictures_the_revision(
    mesh: tuple[Mesh, Bus], tmp_path: Path
) -> None:
    imported = await import_shot(mesh, "pictured", await make_shot(tmp_path))
    assert imported.status == "completed", imported
    files = door(mesh).files
    for _ in range(240):
        png = await files.revision_preview("pictured", 1)
        if png is not None:
            break
        await asyncio.sleep(0.5)
    assert png is not None and png.startswith(b"\x89PNG")
    links = await stored_links(mesh, "pictured", tmp_path / "stored.blend")
    assert shelved(mesh, "previews") == {p.removeprefix("//libraries/"): 0o444 for p in links}


async def test_import_when_shot_links_a_library_it_did_not_bring_refuses_it(
    mesh: tuple[Mesh, Bus], tmp_path: Path
) -> None:
    shot = shot_files.gather(await make_shot(tmp_path))
    try:
        with shot.file.open("rb") as file:
            data = file.read()
    finally:
        shot.close()
    # Staged without its libraries: the links name libraries the run does not bring.
    staged = await door(mesh).import_request("ana", "lone", data, "shot.blend")
    result = await run(mesh, staged)
    assert result.status == "failed", result
    said = str(result.failure)
    assert "did not bring" in said and "characters" in said
    assert await door(mesh).files.head("lone") is None


async def test_import_when_libraries_argument_names_a_path_refuses_it(
    mesh: tuple[Mesh, Bus], tmp_path: Path
) -> None:
    data = await asyncio.to_thread((await make_shot(tmp_path)).read_bytes)
    own = (await door(mesh).import_request("ana", "pathy", data, "shot.blend")).plan
    args = own["operations"][0]["args"]
    hostile = build_request(
        user="ana",
        scene_id="pathy",
        plan=import_plan(
            "req-pathy", args["blob"], args["bytes"], {"../etc": (args["blob"], args["bytes"])}
        ),
    )
    result = await run(mesh, hostile)
    assert result.status == "failed", result
    assert "invalid args at libraries" in result.message and "'../etc'" in result.message
    assert await door(mesh).files.head("pathy") is None


async def test_import_when_shot_links_another_users_library_revision_refuses_it(
    mesh: tuple[Mesh, Bus], tmp_path: Path
) -> None:
    imported = await import_shot(mesh, "anas", await make_shot(tmp_path / "a"))
    assert imported.status == "completed", imported
    written = await door(mesh).download("anas", "ana", tmp_path / "down")
    # Ana's shot as stored: its links name revisions of Ana's project, which Bob's lacks
    # (or holds other bytes under: either way none of Ana's is put beside Bob's shot).
    data = await asyncio.to_thread(written[0].read_bytes)
    request = await door(mesh).import_request("bob", "bobs", data, "shot.blend")
    result = await run(mesh, request, "bob")
    assert result.status == "failed", result
    said = str(result.failure)
    assert "refers to data outside it" in said and "characters@" in said
    assert str(tmp_path) not in said
    assert await door(mesh).files.head("bobs") is None


async def test_import_when_libraries_name_another_users_uploads_refuses_them(
    mesh: tuple[Mesh, Bus], tmp_path: Path
) -> None:
    shot = shot_files.gather(await make_shot(tmp_path))
    try:
        with shot.file.open("rb") as file:
            anas = await door(mesh).import_request(
                "ana", "anas2", file, "shot.blend", libraries=shot.libraries
            )
        with shot.file.open("rb") as file:
            bobs = await door(mesh).import_request("bob", "bobs2", file, "shot.blend")
    finally:
        shot.close()
    # Bob's plan names the libraries Ana staged, by their content addresses.
    args = anas.plan["operations"][0]["args"]
    own = bobs.plan["operations"][0]["args"]
    staged = {n: (u["blob"], u["bytes"]) for n, u in args["libraries"].items()}
    hostile = build_request(
        user="bob",
        scene_id="bobs2",
        plan=import_plan("req-bob-borrows", own["blob"], own["bytes"], staged),
    )
    result = await run(mesh, hostile, "bob")
    assert result.status == "failed", result
    said = str(result.failure)
    assert "no staged upload" in said and "of bob" in said
    assert await door(mesh).files.head("bobs2") is None


async def test_library_update_when_approved_links_the_newer_revision_and_keeps_the_override(
    mesh: tuple[Mesh, Bus], tmp_path: Path
) -> None:
    first = await import_shot(mesh, "upd", await make_shot(tmp_path / "a"))
    assert first.status == "completed", first
    before = await stored_links(mesh, "upd", tmp_path / "before.blend")
    # Another shot brings the character library saved again: its next revision.
    other = await import_shot(mesh, "upd-other", await make_shot(tmp_path / "b"))
    assert other.status == "completed", other
    newer = (await stored_links(mesh, "upd-other", tmp_path / "other.blend"))[0]
    name, revision = newer.removeprefix("//libraries/").removesuffix(".blend").split("@")
    assert newer != before[0]

    request = build_request(
        user="ana", scene_id="upd", plan=update_plan("req-update", name, int(revision))
    )
    asked = await MeshClient(mesh[1]).run(request, timeout=180)
    assert asked.status == "awaiting_confirmation", asked  # destructive: a person approves
    updated = await MeshClient(mesh[1]).resolve(asked.run_id, "approve_once", "ana", timeout=180)
    assert updated.status == "completed", updated
    after = await stored_links(mesh, "upd", tmp_path / "after.blend")
    assert after == [newer, before[1]]
    head = await door(mesh).own("upd", "ana")
    found = await downloaded(mesh, "upd", tmp_path / "down", head.revision)
    assert [p for p, _, _ in found["libraries"]] == after
    assert not any(missing for _, missing, _ in found["libraries"])
    assert hero(found)[3] == HERO_X  # the shot's override survives the new revision


@pytest.mark.parametrize(
    ("name", "revision", "said"),
    [
        ("characters", 9999, "has no revision 9999"),
        ("nobody", 1, "has no revision 1"),
    ],
)
async def test_library_update_when_the_revision_is_not_the_projects_is_refused(
    mesh: tuple[Mesh, Bus], tmp_path: Path, name: str, revision: int, said: str
) -> None:
    scene = f"upd-{name}"
    imported = await import_shot(mesh, scene, await make_shot(tmp_path))
    assert imported.status == "completed", imported
    request = build_request(
        user="ana", scene_id=scene, plan=update_plan(f"req-{name}", name, revision)
    )
    result = await run(mesh, request)
    assert result.status == "failed", result
    assert said in str(result.failure)
    assert (await door(mesh).own(scene, "ana")).revision == 1


async def test_libraries_door_when_listing_shows_only_the_users_project(
    mesh: tuple[Mesh, Bus], tmp_path: Path
) -> None:
    imported = await import_shot(mesh, "listed", await make_shot(tmp_path))
    assert imported.status == "completed", imported
    links = await stored_links(mesh, "listed", tmp_path / "stored.blend")
    anas = await LibraryDoor(mesh[1], mesh[0].settings).revisions("ana")
    named = {f"//libraries/{r['library']}@{r['revision']}.blend" for r in anas}
    assert set(links) <= named
    assert all(len(str(r["sha256"])) == 16 for r in anas)
    assert await LibraryDoor(mesh[1], mesh[0].settings).revisions("carol") == []


async def test_libraries_door_when_update_names_another_users_scene_answers_not_found(
    mesh: tuple[Mesh, Bus], tmp_path: Path
) -> None:
    imported = await import_shot(mesh, "guarded", await make_shot(tmp_path))
    assert imported.status == "completed", imported
    libraries = LibraryDoor(mesh[1], mesh[0].settings)
    with pytest.raises(NoScene, match="no scene guarded"):
        await libraries.update_request("bob", "guarded", "characters", 1)
    with pytest.raises(NotALibrary, match="names no library"):
        await libraries.update_request("ana", "guarded", "../characters", 1)
    with pytest.raises(NotALibrary, match="1 or more"):
        await libraries.update_request("ana", "guarded", "characters", 0)
    with pytest.raises(ValueError, match="scene id"):
        await libraries.update_request("ana", "../guarded", "characters", 1)


async def test_rollback_when_an_operation_fails_on_a_shot_restores_it_beside_its_libraries(
    mesh: tuple[Mesh, Bus], tmp_path: Path
) -> None:
    imported = await import_shot(mesh, "rolled", await make_shot(tmp_path / "a"))
    assert imported.status == "completed", imported
    links = await stored_links(mesh, "rolled", tmp_path / "stored.blend")
    source = await import_shot(mesh, "rolled-src", await make_shot(tmp_path / "b"))
    assert source.status == "completed", source  # the character library's next revision
    newer = (await stored_links(mesh, "rolled-src", tmp_path / "src.blend"))[0]
    name, revision = newer.removeprefix("//libraries/").removesuffix(".blend").split("@")
    # library.update is restored from its checkpoint (no inverse tool undoes it): the
    # stored revision is loaded again when the operation after it fails.
    operations = [
        update_plan("req-x", name, int(revision))["operations"][0],
        {
            "operation_id": "missing",
            "tool_name": "object.transform",
            "args": {"name": "NoSuchObject", "location": [1.0, 0.0, 0.0]},
            "depends_on": ["library_update"],
            "safety_level": "safe_write",
        },
    ]
    plan = {"request_id": "req-rolled", "operations": operations}
    result = await run(mesh, build_request(user="ana", scene_id="rolled", plan=plan))
    assert result.status == "failed", result
    assert {r.status for r in result.receipts} >= {"rolled_back"}
    # The checkpoint, the stored revision, was loaded again beside exactly its libraries
    # (then the update that succeeded was replayed, and kept: the run's committed prefix).
    assert shelved(mesh, "revisions") == {p.removeprefix("//libraries/"): 0o444 for p in links}
    after = await stored_links(mesh, "rolled", tmp_path / "after.blend")
    assert after == [newer, links[1]]
    found = await downloaded(mesh, "rolled", tmp_path / "down", 1)
    assert hero(found)[3] == HERO_X
    assert sorted(p for p, _, _ in found["libraries"]) == links


async def test_import_when_the_shot_is_a_download_keeps_its_library_names(
    mesh: tuple[Mesh, Bus], tmp_path: Path
) -> None:
    imported = await import_shot(mesh, "roundtrip", await make_shot(tmp_path / "a"))
    assert imported.status == "completed", imported
    before = await stored_links(mesh, "roundtrip", tmp_path / "before.blend")
    written = await door(mesh).download("roundtrip", "ana", tmp_path / "down")
    again = await import_shot(mesh, "roundtrip-copy", written[0])
    assert again.status == "completed", again
    # The same bytes under the same names: the same library revisions, none renamed.
    assert await stored_links(mesh, "roundtrip-copy", tmp_path / "after.blend") == before


async def test_change_list_when_a_shot_edits_its_override_and_moves_a_library_names_both(
    mesh: tuple[Mesh, Bus], tmp_path: Path
) -> None:
    first = await import_shot(mesh, "diffed", await make_shot(tmp_path / "a"))
    assert first.status == "completed", first
    moved = build_request(
        user="ana",
        scene_id="diffed",
        plan={
            "request_id": "req-diff-move",
            "operations": [
                {
                    "operation_id": "move",
                    "tool_name": "object.transform",
                    "args": {"name": "Hero", "location": [4.0, 1.0, 0.0]},
                    "depends_on": [],
                    "safety_level": "safe_write",
                }
            ],
        },
    )
    assert (await run(mesh, moved)).status == "completed"
    other = await import_shot(mesh, "diffed-other", await make_shot(tmp_path / "b"))
    assert other.status == "completed", other
    newer = (await stored_links(mesh, "diffed-other", tmp_path / "other.blend"))[0]
    name, revision = newer.removeprefix("//libraries/").removesuffix(".blend").split("@")
    was, props = await stored_links(mesh, "diffed", tmp_path / "was.blend")
    old_revision = int(was.removesuffix(".blend").split("@")[1])
    props_revision = int(props.removesuffix(".blend").split("@")[1])
    assert (name, int(revision)) != ("characters", old_revision)
    request = build_request(
        user="ana", scene_id="diffed", plan=update_plan("req-diff-update", name, int(revision))
    )
    assert (await run(mesh, request)).status == "completed"
    revisions = Revisions.of(mesh[1], frozenset)

    imported_list = await revisions.changes("diffed", "ana", revision=1)  # against nothing
    added = {c.name for c in imported_list.changes if (c.kind, c.action) == ("library", "added")}
    assert added == {"characters", "props"}
    edit = await revisions.changes("diffed", "ana", base=1, revision=2)
    [hero_edit] = [c for c in edit.changes if c.kind == "object" and c.name == "Hero"]
    assert {p.name: p.after for p in hero_edit.properties}["location"] == [4.0, 1.0, 0.0]
    assert not [c for c in edit.changes if c.kind == "library"]  # the same revisions
    found = await door(mesh).files.revision_inspection("diffed", 2)
    assert found is not None
    shown = artifacts.decode(found[1])
    hero_now = next(o for o in shown.objects if o.name == "Hero")
    assert hero_now.library == f"characters@{old_revision}" and "location" in hero_now.overridden
    lamp = next(o for o in shown.objects if o.name == "Lamp")
    assert lamp.library == f"props@{props_revision}" and lamp.overridden == []
    assert shown.libraries == {"characters": old_revision, "props": props_revision}

    update = await revisions.changes("diffed", "ana")  # the head against its parent
    [library] = [c for c in update.changes if c.kind == "library"]
    assert (library.name, library.action) == ("characters", "changed")
    assert [(p.name, p.before, p.after) for p in library.properties] == [
        ("revision", old_revision, int(revision))
    ]
    [hero_update] = [c for c in update.changes if c.kind == "object" and c.name == "Hero"]
    assert {p.name: (p.before, p.after) for p in hero_update.properties}["library"] == (
        f"characters@{old_revision}", f"characters@{revision}",
    )  # fmt: skip
    assert "library characters changed" in "\n".join(change_lines(update))


async def test_library_publish_when_approved_makes_the_next_revision_only_this_shot_links(
    mesh: tuple[Mesh, Bus], tmp_path: Path
) -> None:
    libraries = LibraryDoor(mesh[1], mesh[0].settings)
    for scene in ("pub", "pub-kept"):
        imported = await import_shot(mesh, scene, await make_shot(tmp_path / scene))
        assert imported.status == "completed", imported
    kept = await stored_links(mesh, "pub-kept", tmp_path / "kept.blend")
    before = {(r["library"], r["revision"]) for r in await libraries.revisions("ana")}
    # The library saved again by the artist, published on purpose for one shot.
    await make_shot(tmp_path / "newer")
    library = tmp_path / "newer" / "lib" / "Characters.blend"

    request = await libraries.publish_request("ana", "pub", "characters", library)
    asked = await MeshClient(mesh[1]).run(request, timeout=180)
    assert asked.status == "awaiting_confirmation", asked  # destructive: a person approves
    done = await MeshClient(mesh[1]).resolve(asked.run_id, "approve_once", "ana", timeout=180)
    assert done.status == "completed", done

    after = {(r["library"], r["revision"]) for r in await libraries.revisions("ana")}
    [published] = after - before
    assert published[0] == "characters" and published[1] > max(
        rev for name, rev in before if name == "characters"
    )
    links = await stored_links(mesh, "pub", tmp_path / "pub.blend")
    assert links[0] == f"//libraries/characters@{published[1]}.blend"
    assert await stored_links(mesh, "pub-kept", tmp_path / "kept2.blend") == kept  # unmoved
    head = await door(mesh).own("pub", "ana")
    found = await downloaded(mesh, "pub", tmp_path / "down", head.revision)
    assert not any(missing for _, missing, _ in found["libraries"]), found
    assert hero(found)[3] == HERO_X  # the shot's override survives the new revision


async def test_library_publish_when_hostile_is_refused_and_publishes_nothing(
    mesh: tuple[Mesh, Bus], tmp_path: Path
) -> None:
    imported = await import_shot(mesh, "pub-bad", await make_shot(tmp_path / "shot"))
    assert imported.status == "completed", imported
    libraries = LibraryDoor(mesh[1], mesh[0].settings)
    library = tmp_path / "shot" / "lib" / "props.blend"
    with pytest.raises(NoScene, match="no scene pub-bad"):
        await libraries.publish_request("bob", "pub-bad", "props", library)
    with pytest.raises(NotALibrary, match="names no library"):
        await libraries.publish_request("ana", "pub-bad", "../props", library)
    with pytest.raises(ValueError, match="scene id"):
        await libraries.publish_request("ana", "../pub-bad", "props", library)
    text = tmp_path / "notes.blend"
    text.write_bytes(b"not a blend at all" * 10)
    with pytest.raises(NotABlend):
        await libraries.publish_request("ana", "pub-bad", "props", text)
    before = await libraries.revisions("ana")
    # A library the shot does not link: refused before anything is published.
    request = await libraries.publish_request("ana", "pub-bad", "sets", library)
    result = await run(mesh, request)
    assert result.status == "failed", result
    assert "links no library 'sets'" in str(result.failure)
    assert await libraries.revisions("ana") == before
    assert (await door(mesh).own("pub-bad", "ana")).revision == 1


async def test_library_publish_when_the_file_links_others_or_is_anothers_upload_refuses_it(
    mesh: tuple[Mesh, Bus], tmp_path: Path
) -> None:
    """The red team's library attacks by the new path: a "library" that is itself a shot
    linking other files (a host path or another user's scene would be linked the same
    way), and a plan naming another user's staged upload."""
    from services.executor.client import ObjectStoreUploads

    imported = await import_shot(mesh, "pub-evil", await make_shot(tmp_path / "shot"))
    assert imported.status == "completed", imported
    libraries = LibraryDoor(mesh[1], mesh[0].settings)
    before = await libraries.revisions("ana")
    linking = tmp_path / "shot" / "shot.blend"  # links lib/Characters.blend and props.blend
    request = await libraries.publish_request("ana", "pub-evil", "props", linking)
    result = await run(mesh, request)
    assert result.status == "failed", result
    assert "itself links 2 other .blend files" in str(result.failure)
    assert str(tmp_path) not in str(result.failure)  # no host path is named back

    await make_shot(tmp_path / "bobs")  # saved again: bytes ana never staged
    props = tmp_path / "bobs" / "lib" / "props.blend"
    with props.open("rb") as file:
        bobs = await ObjectStoreUploads(mesh[1].js, mesh[1].prefix).stage("bob", file)
    size = props.stat().st_size
    plan = publish_plan("req-bobs-upload", "props", bobs, size)
    stolen = await run(mesh, build_request(user="ana", scene_id="pub-evil", plan=plan))
    assert stolen.status == "failed", stolen
    assert "no staged upload" in str(stolen.failure) and "of ana" in str(stolen.failure)
    assert await libraries.revisions("ana") == before
    assert (await door(mesh).own("pub-evil", "ana")).revision == 1
