"""The executor's library shelf and an import's publishing of libraries, with in-memory
fakes of the store, the uploads and the .blend links (the real adapters run in
tests/integration/test_linked_libraries.py)."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path
from typing import Any, BinaryIO

from contracts.libraries import MAX_LIBRARIES
from services.executor.domain.library_imports import publish_libraries, relink
from services.executor.domain.library_shelf import LibraryShelf

BLEND = b"BLENDER-v500" + b"\0" * 64


class FakeStore:
    """Revisions by (project, name); publishing the newest's bytes again publishes none."""

    def __init__(self) -> None:
        self.revisions: dict[tuple[str, str], list[bytes]] = {}
        self.fetched: list[tuple[str, str, int]] = []

    async def publish(self, project: str, name: str, path: Path) -> int:
        held = self.revisions.setdefault((project, name), [])
        data = await asyncio.to_thread(path.read_bytes)
        if not held or held[-1] != data:
            held.append(data)
        return len(held)

    async def fetch(self, project: str, name: str, revision: int, dest: Path) -> bool:
        held = self.revisions.get((project, name), [])
        if not 1 <= revision <= len(held):
            return False
        self.fetched.append((project, name, revision))
        await asyncio.to_thread(dest.write_bytes, held[revision - 1])
        return True


class FakeLinks:
    """The library paths of each file, by file name; a rewrite replaces them."""

    def __init__(self, paths: dict[str, list[str]]) -> None:
        self.paths = paths

    def read(self, path: Path) -> list[str]:
        if path.name not in self.paths and not path.name.startswith(".library-"):
            raise ValueError("not a .blend")
        return list(self.paths.get(path.name, []))

    def rewrite(self, path: Path, paths: dict[str, str]) -> None:
        self.paths[path.name] = [paths.get(p, p) for p in self.paths[path.name]]


class FakeUploads:
    def __init__(self, staged: dict[tuple[str, str], bytes]) -> None:
        self.staged = staged

    async def fetch(self, user: str, blob: str, dest: BinaryIO, max_bytes: int) -> bool:
        data = self.staged.get((user, blob))
        if data is None:
            return False
        dest.write(data)
        return True


def staged_copies(folder: Path) -> list[Path]:
    """The libraries' staged copies an import left in ``folder`` (none, once it is done)."""
    return list(folder.glob(".library-*"))


def shelf(tmp_path: Path, links: dict[str, list[str]], store: FakeStore | None = None) -> Any:
    return LibraryShelf(store or FakeStore(), FakeLinks(links), tmp_path / "cache")


async def test_materialise_when_shot_links_revisions_puts_exactly_those_read_only(
    tmp_path: Path,
) -> None:
    store = FakeStore()
    store.revisions[("personal-ana", "props")] = [b"p1", b"p2"]
    store.revisions[("personal-bob", "secret")] = [b"bob"]
    links = ["//libraries/props@2.blend", "//libraries/secret@1.blend", "/etc/x.blend"]
    ana = shelf(tmp_path, {"shot.blend": links}, store)
    ana.project = "personal-ana"
    stale = tmp_path / "work" / "libraries" / "old@1.blend"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"left from another scene")
    placed = await ana.materialise(str(tmp_path / "work" / "shot.blend"))
    assert placed == [("props", 2)]  # bob's library is not ana's project's: left out
    files = sorted((tmp_path / "work" / "libraries").iterdir())
    assert [f.name for f in files] == ["props@2.blend"]
    assert files[0].read_bytes() == b"p2"
    assert stat.S_IMODE(files[0].stat().st_mode) == 0o444
    await ana.materialise(str(tmp_path / "work" / "shot.blend"))
    assert store.fetched == [("personal-ana", "props", 2)]  # cached after the first


async def test_materialise_when_no_project_or_unreadable_empties_the_folder(
    tmp_path: Path,
) -> None:
    nobody = shelf(tmp_path, {"shot.blend": ["//libraries/props@1.blend"]})
    folder = tmp_path / "libraries"
    folder.mkdir()
    (folder / "props@1.blend").write_bytes(b"stale")
    assert await nobody.materialise(str(tmp_path / "shot.blend")) == []
    assert list(folder.iterdir()) == []
    nobody.project = "personal-ana"
    assert await nobody.materialise(str(tmp_path / "garbage.bin")) == []


async def test_materialise_when_shot_links_too_many_fetches_one_past_the_bound(
    tmp_path: Path,
) -> None:
    store = FakeStore()
    for n in range(MAX_LIBRARIES + 5):
        store.revisions[("p", f"lib{n:02d}")] = [b"x"]
    links = [f"//libraries/lib{n:02d}@1.blend" for n in range(MAX_LIBRARIES + 5)]
    many = shelf(tmp_path, {"shot.blend": links}, store)
    many.project = "p"
    placed = await many.materialise(str(tmp_path / "shot.blend"))
    assert len(placed) == MAX_LIBRARIES + 1  # the bridge refuses the shot over the bound


async def test_publish_when_libraries_are_staged_rewrites_links_to_published_revisions(
    tmp_path: Path,
) -> None:
    store = FakeStore()
    links = {"shot.blend": ["//libraries/props.blend", "//libraries/hero.blend"]}
    ana = shelf(tmp_path, links, store)
    uploads = FakeUploads({("ana", "sha256:p"): BLEND + b"p", ("ana", "sha256:h"): BLEND + b"h"})
    staged = {"props": {"blob": "sha256:p", "bytes": len(BLEND) + 1}}
    staged["hero"] = {"blob": "sha256:h", "bytes": len(BLEND) + 1}
    shot = tmp_path / "shot.blend"
    assert await publish_libraries(ana, uploads, "ana", staged, shot) is None
    assert links["shot.blend"] == ["//libraries/props@1.blend", "//libraries/hero@1.blend"]
    assert sorted(store.revisions) == [("personal-ana", "hero"), ("personal-ana", "props")]
    assert not await asyncio.to_thread(staged_copies, tmp_path)


async def test_publish_when_shot_links_a_library_not_brought_refuses_before_publishing(
    tmp_path: Path,
) -> None:
    store = FakeStore()
    links = {"shot.blend": ["//libraries/props.blend", "//libraries/hero.blend"]}
    uploads = FakeUploads({("ana", "sha256:p"): BLEND})
    staged = {"props": {"blob": "sha256:p", "bytes": len(BLEND)}}
    refused = await publish_libraries(
        shelf(tmp_path, links, store), uploads, "ana", staged, tmp_path / "shot.blend"
    )
    assert refused is not None and "hero" in refused.message and not refused.mutated
    assert store.revisions == {}


async def test_publish_when_upload_is_another_users_or_not_a_blend_refuses_naming_it(
    tmp_path: Path,
) -> None:
    links = {"shot.blend": ["//libraries/props.blend"]}
    uploads = FakeUploads({("bob", "sha256:p"): BLEND, ("ana", "sha256:t"): b"just text"})
    staged = {"props": {"blob": "sha256:p", "bytes": len(BLEND)}}
    refused = await publish_libraries(
        shelf(tmp_path, links), uploads, "ana", staged, tmp_path / "shot.blend"
    )
    assert refused is not None and refused.error_code == "not_found" and "of ana" in refused.message
    staged = {"props": {"blob": "sha256:t", "bytes": 9}}
    refused = await publish_libraries(
        shelf(tmp_path, links), uploads, "ana", staged, tmp_path / "shot.blend"
    )
    assert refused is not None and "not a .blend file" in refused.message


async def test_publish_when_a_library_links_another_file_refuses_before_publishing(
    tmp_path: Path,
) -> None:
    store = FakeStore()
    links = {"shot.blend": ["//libraries/props.blend"]}
    nested = shelf(tmp_path, links, store)
    # The staged copy is read as linking a host file.
    nested.links = FakeLinks({**links})
    original = nested.links.read

    def read(path: Path) -> list[str]:
        return ["/home/bob/secret.blend"] if path.name.startswith(".library-") else original(path)

    nested.links.read = read
    uploads = FakeUploads({("ana", "sha256:p"): BLEND})
    staged = {"props": {"blob": "sha256:p", "bytes": len(BLEND)}}
    refused = await publish_libraries(nested, uploads, "ana", staged, tmp_path / "shot.blend")
    assert refused is not None and "itself links 1 other" in refused.message
    assert "/home/bob" not in refused.message
    assert store.revisions == {}


async def test_relink_when_scene_links_the_library_points_every_link_at_the_revision(
    tmp_path: Path,
) -> None:
    links = {"saved.blend": ["//libraries/props@1.blend", "//libraries/hero@3.blend"]}
    saved = tmp_path / "saved.blend"
    assert await relink(shelf(tmp_path, links), saved, "props", 4) is None
    assert links["saved.blend"] == ["//libraries/props@4.blend", "//libraries/hero@3.blend"]
    refused = await relink(shelf(tmp_path, links), saved, "lamp", 2)
    assert refused is not None and "links no library 'lamp'" in refused.message
    assert "hero, props" in refused.message


async def test_publish_when_user_name_has_dots_and_at_signs_keeps_them_in_their_project(
    tmp_path: Path,
) -> None:
    store = FakeStore()
    links = {"shot.blend": ["//libraries/props.blend"]}
    uploads = FakeUploads({("ana.b@studio", "sha256:p"): BLEND})
    staged = {"props": {"blob": "sha256:p", "bytes": len(BLEND)}}
    done = await publish_libraries(
        shelf(tmp_path, links, store), uploads, "ana.b@studio", staged, tmp_path / "shot.blend"
    )
    assert done is None
    assert list(store.revisions) == [("personal-ana=2Eb=40studio", "props")]
