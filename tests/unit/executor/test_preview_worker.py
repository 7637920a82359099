"""The preview worker: renders the newest revision of each scene, off the run's path."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from services.executor.adapters.exports import SceneExports
from services.executor.domain.preview_worker import PreviewWorker
from services.executor.memory import MemoryPreviews


class Painter:
    """A bridge that paints the bytes of the file it loaded; renders wait for ``gate``."""

    def __init__(self) -> None:
        self.loaded = b""
        self.loads: list[bytes] = []
        self.gate = asyncio.Event()
        self.gate.set()
        self.rendering = asyncio.Event()
        self.broken: set[bytes] = set()
        self.hung: set[bytes] = set()
        self.restarts = 0

    async def load(self, path: str) -> str:
        self.loaded = await asyncio.to_thread(Path(path).read_bytes)
        self.loads.append(self.loaded)
        return "hash"

    async def render_preview(self, path: str, width: int = 320, height: int = 240) -> None:
        self.rendering.set()
        await self.gate.wait()
        if self.loaded in self.hung:
            raise TimeoutError("no answer")
        if self.loaded in self.broken:
            raise RuntimeError("no picture today")
        await asyncio.to_thread(Path(path).write_bytes, b"\x89PNG" + self.loaded)

    async def export_gltf(self, path: str, max_bytes: int) -> None:
        await asyncio.to_thread(Path(path).write_bytes, b"glTF" + self.loaded)

    async def restart(self) -> None:
        self.restarts += 1


def worker(tmp_path: Path, painter: Painter, max_pending: int = 8) -> PreviewWorker:
    async def opened() -> Any:
        return painter

    return PreviewWorker(
        opened,
        SceneExports(tmp_path / "scenes"),
        MemoryPreviews(),
        tmp_path / "previews",
        max_pending=max_pending,
    )


def revision(tmp_path: Path, scene: str, n: int) -> Path:
    path = tmp_path / "revisions" / f"{scene}-{n}.blend"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(f"{scene}@{n}".encode())
    return path


def pictures(w: PreviewWorker) -> dict[str, bytes]:
    assert isinstance(w.previews, MemoryPreviews)
    return w.previews.items


async def test_submit_when_commits_pile_up_during_a_render_renders_only_the_newest(
    tmp_path: Path,
) -> None:
    painter = Painter()
    painter.gate.clear()
    w = worker(tmp_path, painter)
    w.submit("s", 1, revision(tmp_path, "s", 1))
    await painter.rendering.wait()
    for n in (2, 3, 4):
        w.submit("s", n, revision(tmp_path, "s", n))
    painter.gate.set()
    await w.idle()
    assert painter.loads == [b"s@1", b"s@4"]
    assert pictures(w) == {"s": b"\x89PNGs@4"}
    assert w.files.preview_path("s").read_bytes() == b"\x89PNGs@4"
    assert list((tmp_path / "previews").glob("*.blend")) == []  # no link left behind
    await w.close()


async def test_submit_when_returning_has_not_rendered_yet(tmp_path: Path) -> None:
    painter = Painter()
    w = worker(tmp_path, painter)
    w.submit("s", 1, revision(tmp_path, "s", 1))
    assert pictures(w) == {}  # the caller never waits for the picture
    await w.idle()
    assert pictures(w) == {"s": b"\x89PNGs@1"}
    await w.close()


async def test_submit_when_revision_not_newer_than_pictured_renders_nothing(
    tmp_path: Path,
) -> None:
    painter = Painter()
    w = worker(tmp_path, painter)
    w.submit("s", 2, revision(tmp_path, "s", 2))
    await w.idle()
    w.submit("s", 2, revision(tmp_path, "s", 2))  # a run that committed nothing new
    w.submit("s", 1, revision(tmp_path, "s", 1))
    await w.idle()
    assert painter.loads == [b"s@2"]
    await w.close()


async def test_submit_when_revision_file_is_gone_logs_and_renders_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    painter = Painter()
    w = worker(tmp_path, painter)
    with caplog.at_level(logging.WARNING, "blendmesh.executor"):
        w.submit("s", 1, tmp_path / "revisions" / "missing.blend")
    await w.idle()
    assert painter.loads == [] and pictures(w) == {}
    assert "no preview for scene s revision 1" in caplog.text
    await w.close()


async def test_render_when_it_fails_logs_and_the_next_scene_is_still_rendered(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    painter = Painter()
    painter.broken.add(b"a@1")
    w = worker(tmp_path, painter)
    with caplog.at_level(logging.WARNING, "blendmesh.executor"):
        w.submit("a", 1, revision(tmp_path, "a", 1))
        w.submit("b", 1, revision(tmp_path, "b", 1))
        await w.idle()
    assert pictures(w) == {"b": b"\x89PNGb@1"}
    assert "no preview for scene a: no picture today" in caplog.text
    assert painter.restarts == 0  # a failed render is no reason to replace the bridge
    w.submit("a", 2, revision(tmp_path, "a", 2))
    await w.idle()
    assert pictures(w)["a"] == b"\x89PNGa@2"
    await w.close()


async def test_render_when_the_bridge_hangs_restarts_it(tmp_path: Path) -> None:
    painter = Painter()
    painter.hung.add(b"s@1")
    w = worker(tmp_path, painter)
    w.submit("s", 1, revision(tmp_path, "s", 1))
    await w.idle()
    assert painter.restarts == 1 and pictures(w) == {}
    await w.close()


async def test_submit_when_more_scenes_wait_than_the_limit_drops_the_oldest(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    painter = Painter()
    painter.gate.clear()
    w = worker(tmp_path, painter, max_pending=2)
    w.submit("busy", 1, revision(tmp_path, "busy", 1))
    await painter.rendering.wait()
    with caplog.at_level(logging.WARNING, "blendmesh.executor"):
        for scene in ("a", "b", "c"):
            w.submit(scene, 1, revision(tmp_path, scene, 1))
    painter.gate.set()
    await w.idle()
    assert sorted(pictures(w)) == ["b", "busy", "c"]
    assert "preview of scene a dropped: 2 scenes wait" in caplog.text
    await w.close()


async def test_close_when_renders_wait_removes_their_links(tmp_path: Path) -> None:
    painter = Painter()
    painter.gate.clear()
    w = worker(tmp_path, painter)
    w.submit("s", 1, revision(tmp_path, "s", 1))
    await painter.rendering.wait()
    w.submit("t", 1, revision(tmp_path, "t", 1))
    await w.close(grace=0.05)  # the render under way hangs: only the links matter here
    assert list((tmp_path / "previews").glob("*.blend")) == []
    assert pictures(w) == {}


async def test_start_when_the_bridge_cannot_start_renders_once_it_can(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    painter = Painter()
    tries = []

    async def flaky() -> Any:
        tries.append(1)
        if len(tries) == 1:
            raise RuntimeError("no Blender yet")
        return painter

    w = PreviewWorker(flaky, SceneExports(tmp_path / "scenes"), MemoryPreviews(), tmp_path / "p")
    with caplog.at_level(logging.WARNING, "blendmesh.executor"):
        w.start()
        w.submit("s", 1, revision(tmp_path, "s", 1))
        await w.idle()
    assert "the preview bridge did not start: no Blender yet" in caplog.text
    assert pictures(w) == {"s": b"\x89PNGs@1"}
    await w.close()


async def test_close_when_a_render_is_under_way_lets_it_end_first(tmp_path: Path) -> None:
    painter = Painter()
    painter.gate.clear()
    w = worker(tmp_path, painter)
    w.submit("s", 1, revision(tmp_path, "s", 1))
    await painter.rendering.wait()
    closing = asyncio.create_task(w.close())
    await asyncio.sleep(0.05)
    assert not closing.done()  # waits for Blender's answer instead of dropping it
    painter.gate.set()
    await closing
    assert pictures(w) == {"s": b"\x89PNGs@1"}


async def test_close_when_a_render_hangs_gives_up_after_the_grace(tmp_path: Path) -> None:
    painter = Painter()
    painter.gate.clear()
    w = worker(tmp_path, painter)
    w.submit("s", 1, revision(tmp_path, "s", 1))
    await painter.rendering.wait()
    await w.close(grace=0.05)
    assert pictures(w) == {}


async def test_submit_when_rendered_keeps_the_revisions_picture_and_model(tmp_path: Path) -> None:
    painter = Painter()
    w = worker(tmp_path, painter)
    w.submit("s", 1, revision(tmp_path, "s", 1))
    await w.idle()
    w.submit("s", 2, revision(tmp_path, "s", 2))
    await w.idle()
    assert isinstance(w.previews, MemoryPreviews)
    assert w.previews.revisions == {("s", 1): b"\x89PNGs@1", ("s", 2): b"\x89PNGs@2"}
    assert w.previews.models == {("s", 1): b"glTFs@1", ("s", 2): b"glTFs@2"}
    assert list((tmp_path / "previews").glob("*.glb")) == []  # handed on, not left behind
    await w.close()


async def test_submit_when_model_export_fails_keeps_the_picture_and_logs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    painter = Painter()

    async def refuse(path: str, max_bytes: int) -> None:
        raise RuntimeError("the scene as glTF is 99 bytes, over the 10 allowed")

    painter.export_gltf = refuse  # type: ignore[method-assign]
    w = worker(tmp_path, painter)
    with caplog.at_level(logging.WARNING, "blendmesh.executor"):
        w.submit("s", 1, revision(tmp_path, "s", 1))
        await w.idle()
    assert pictures(w) == {"s": b"\x89PNGs@1"}
    assert isinstance(w.previews, MemoryPreviews) and w.previews.models == {}
    assert "no glTF for scene s revision 1" in caplog.text
    await w.close()


async def test_rendering_when_a_render_is_under_way_is_true_and_after_it_false(
    tmp_path: Path,
) -> None:
    # The preview bridge is never stopped for idling while this is true (ADR 0033): the
    # revision loaded for the picture lives in it between the render's calls.
    painter = Painter()
    painter.gate.clear()
    w = worker(tmp_path, painter)
    assert not w.rendering
    w.submit("s1", 1, revision(tmp_path, "s1", 1))
    await asyncio.wait_for(painter.rendering.wait(), 5)
    assert w.rendering
    painter.gate.set()
    await asyncio.wait_for(w.idle(), 5)
    assert not w.rendering
    await w.close()
