"""The revision reader's bounds, on an in-memory revision source: at most two windows of
chunks fetched ahead of what the client took, and nothing left running when the client
stops reading. (The real chunk store and gateway: tests/integration/test_gateway_download.)"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

import blake3
import pytest

from contracts.revisions import DIGEST_PREFIX, ChunkedRevision
from contracts.scenes import Head
from services.doors.core.revision_reader import WINDOW, open_revision
from services.executor.client import RevisionDamaged

HEAD = Head(scene_id="s", revision=3, scene_hash="h", object_name="s/00000003-h", epoch=1)


class Source:
    """A revision of ``count`` distinct chunks; records how many pieces the client had
    taken when each window was asked for, and may hold one window back for ever."""

    def __init__(self, count: int, hold: int | None = None) -> None:
        self.pieces = [f"chunk {i} ".encode() * 50 for i in range(count)]
        self.by_digest = {blake3.blake3(p).hexdigest(): p for p in self.pieces}
        whole = b"".join(self.pieces)
        self.revision = ChunkedRevision(
            space="ana",
            size=len(whole),
            digest=DIGEST_PREFIX + blake3.blake3(whole).hexdigest(),
            chunks=[(blake3.blake3(p).hexdigest(), len(p)) for p in self.pieces],
        )
        self.taken = 0
        self.asked_when: list[int] = []
        self.hold, self.held = hold, asyncio.Event()
        self.cancelled = False

    async def manifest(self, head: Head) -> ChunkedRevision | None:
        return self.revision

    async def blend(self, head: Head) -> bytes:
        raise AssertionError("a chunked revision is never read whole")

    async def chunks(self, space: str, digests: Iterable[str]) -> dict[str, bytes | None]:
        self.asked_when.append(self.taken)
        if len(self.asked_when) - 1 == self.hold:
            try:
                await self.held.wait()
            except asyncio.CancelledError:
                self.cancelled = True
                raise
        return {d: self.by_digest.get(d) for d in digests}


async def test_pieces_when_read_slowly_fetch_one_window_ahead_at_most() -> None:
    source = Source(5 * WINDOW + 3)
    reader = await open_revision(source, HEAD)
    got = []
    async for piece in reader.pieces():
        got.append(piece)
        source.taken += 1
        await asyncio.sleep(0)  # a slow client: the prefetch gets every chance to run ahead
    assert got == source.pieces and reader.size == source.revision.size
    # Window k is asked for once the client has taken all but the window before it.
    assert source.asked_when == [0, 0, *(k * WINDOW for k in range(1, 5))]


async def test_pieces_when_client_stops_reading_cancel_the_window_ahead() -> None:
    source = Source(4 * WINDOW, hold=1)  # the window after the first never comes
    reader = await open_revision(source, HEAD)
    pieces = reader.pieces()
    assert await anext(pieces) == source.pieces[0]
    await asyncio.sleep(0)
    await pieces.aclose()
    assert source.cancelled


async def test_open_when_a_chunk_of_the_first_window_is_missing_raises_before_any_byte() -> None:
    source = Source(2 * WINDOW)
    del source.by_digest[source.revision.chunks[3][0]]
    with pytest.raises(RevisionDamaged, match="revision 3 of scene s is damaged: its chunk"):
        await open_revision(source, HEAD)


async def test_pieces_when_a_later_chunk_is_wrong_stop_before_it() -> None:
    source = Source(3 * WINDOW)
    bad = source.revision.chunks[WINDOW + 2][0]
    source.by_digest[bad] = b"not the chunk"
    reader = await open_revision(source, HEAD)
    got = []
    with pytest.raises(RevisionDamaged, match=f"its chunk {bad[:16]} does not hash to its name"):
        async for piece in reader.pieces():
            got.append(piece)
    assert got == source.pieces[:WINDOW]


async def test_pieces_when_revision_is_stored_whole_yield_it_once() -> None:
    class Whole(Source):
        async def manifest(self, head: Head) -> ChunkedRevision | None:
            return None

        async def blend(self, head: Head) -> bytes:
            return b"BLENDER-whole"

    reader = await open_revision(Whole(1), HEAD)
    assert reader.size == len(b"BLENDER-whole")
    assert [p async for p in reader.pieces()] == [b"BLENDER-whole"]


async def test_pieces_when_chunks_do_not_make_the_recorded_file_withhold_the_last() -> None:
    source = Source(2 * WINDOW + 1)
    source.revision = ChunkedRevision(
        space="ana",
        size=source.revision.size,
        digest=DIGEST_PREFIX + "0" * 64,
        chunks=source.revision.chunks,
    )
    reader = await open_revision(source, HEAD)
    got = []
    with pytest.raises(RevisionDamaged, match="do not add up to the file it recorded"):
        async for piece in reader.pieces():
            got.append(piece)
    assert got == source.pieces[: 2 * WINDOW]  # the last window is never sent
