"""The executor's Previews port: MemoryPreviews and ObjectStorePreviews held to the same
behaviour. The gateway reads what the executor wrote, through the same port."""

from __future__ import annotations

import asyncio

import pytest

from services.executor.adapters.previews import ObjectStorePreviews
from services.executor.domain.ports import KEPT_REVISION_PREVIEWS, Previews
from services.executor.memory import MemoryPreviews
from services.runtime.service.host import Bus

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


class PreviewsContract:
    """Subclass with a ``previews`` fixture."""

    async def test_get_when_nothing_rendered_yet_returns_none(self, previews: Previews) -> None:
        assert await previews.get("s") is None

    async def test_put_when_read_back_returns_same_bytes(self, previews: Previews) -> None:
        await previews.put("s", PNG)
        assert await previews.get("s") == PNG
        assert await previews.get("other") is None

    async def test_put_when_scene_rendered_again_keeps_only_latest(
        self, previews: Previews
    ) -> None:
        await previews.put("s", PNG)
        await previews.put("s", PNG + b"later")
        assert await previews.get("s") == PNG + b"later"

    async def test_put_revision_when_read_back_is_apart_from_the_head(
        self, previews: Previews
    ) -> None:
        await previews.put_revision("s", 1, PNG + b"1")
        await previews.put_revision("s", 2, PNG + b"2")
        assert await previews.get_revision("s", 1) == PNG + b"1"
        assert await previews.get_revision("s", 2) == PNG + b"2"
        assert await previews.get_revision("s", 3) is None
        assert await previews.get("s") is None  # the head's picture is put on its own

    async def test_put_revision_when_window_passed_deletes_the_oldest(
        self, previews: Previews
    ) -> None:
        newest = KEPT_REVISION_PREVIEWS + 2
        for revision in range(1, newest + 1):
            await previews.put_revision("s", revision, PNG)
        assert await previews.get_revision("s", 2) is None
        assert await previews.get_revision("s", newest - KEPT_REVISION_PREVIEWS + 1) == PNG

    async def test_put_model_when_read_back_is_apart_from_the_picture(
        self, previews: Previews
    ) -> None:
        await previews.put_revision("s", 1, PNG)
        await previews.put_model("s", 1, b"glTF-1")
        assert await previews.get_model("s", 1) == b"glTF-1"
        assert await previews.get_revision("s", 1) == PNG
        assert await previews.get_model("s", 2) is None


class TestMemoryPreviews(PreviewsContract):
    @pytest.fixture
    def previews(self) -> Previews:
        return MemoryPreviews()


@pytest.mark.integration
class TestObjectStorePreviews(PreviewsContract):
    @pytest.fixture
    def previews(self, executor_bus: Bus) -> Previews:
        return ObjectStorePreviews(executor_bus.js, executor_bus.prefix)

    async def test_get_when_picture_replaced_during_reads_returns_a_whole_one(
        self, previews: Previews
    ) -> None:
        """A door reads a scene's picture while commits replace it: each read returns one
        of the pictures written, whole, and none waits for chunks the replacement purged."""
        pictures = [PNG + bytes([n]) * (1536 * 1024 + n) for n in range(12)]
        await previews.put("s", pictures[0])
        read: list[bytes | None] = []

        async def reader() -> None:
            while len(read) < 60:
                read.append(await previews.get("s"))

        async def writer() -> None:
            for picture in pictures[1:]:
                await previews.put("s", picture)

        async with asyncio.timeout(60):
            await asyncio.gather(reader(), writer(), reader())
        assert all(found in pictures for found in read), [len(f or b"") for f in read]
        assert await previews.get("s") == pictures[-1]
