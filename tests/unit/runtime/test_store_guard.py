"""The store guard: a disk too full for JetStream makes the server refuse writes, and room
again makes it take them (a fake server and disk; tests/chaos/test_disk_full.py fills a
real one)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from services.runtime.nats.retry import poll
from services.runtime.server.embedded import EmbeddedServerError
from services.runtime.server.store_guard import LOW_FREE, REFUSING, RESUME_FREE, StoreGuard
from services.runtime.service.store_limits import MIB, StoreLimits

pytestmark = pytest.mark.asyncio

STARTED = StoreLimits(file_store=64 * MIB)
RAISED = StoreLimits(file_store=32 * MIB)


class FakeServer:
    def __init__(
        self, log_path: Path | None = None, fails: bool = False, reload_fails: bool = False
    ) -> None:
        self.log_path = log_path
        self.fails = fails
        self.reload_fails = reload_fails
        self.calls: list[tuple[str, StoreLimits]] = []

    async def restart(self, limits: StoreLimits) -> str:
        if self.fails:
            raise EmbeddedServerError("nats-server was not found")
        self.calls.append(("restart", limits))
        return "nats://127.0.0.1:4222"

    async def raise_limits(self, limits: StoreLimits) -> None:
        if self.reload_fails:
            raise ProcessLookupError("no such process")
        self.calls.append(("raise", limits))


class FakeDisk:
    def __init__(self, free: int) -> None:
        self.left = free

    async def free(self) -> int:
        return self.left


async def raised() -> StoreLimits:
    return RAISED


def guard(server: FakeServer, disk: FakeDisk) -> StoreGuard:
    return StoreGuard(server, disk.free, raised, STARTED, interval=0.01)


async def until_calls(server: FakeServer, count: int) -> None:
    async def calls() -> int:
        return len(server.calls)

    assert await poll(calls, lambda made: made >= count, 5, pause=0.01) >= count, server.calls


async def test_guard_when_disk_fills_restarts_refusing_then_raises_once_freed() -> None:
    server, disk = FakeServer(), FakeDisk(100 * MIB)
    watching = guard(server, disk)
    task = asyncio.ensure_future(watching.run())
    try:
        await asyncio.sleep(0.1)
        assert server.calls == [] and not watching.refusing  # plenty of room: nothing done
        disk.left = LOW_FREE - 1
        await until_calls(server, 1)
        assert server.calls == [("restart", REFUSING)]
        assert watching.refusing and watching.limits == REFUSING
        disk.left = RESUME_FREE - 1  # more room, not yet enough: it keeps refusing
        await asyncio.sleep(0.1)
        assert len(server.calls) == 1 and watching.refusing
        disk.left = RESUME_FREE
        await until_calls(server, 2)
        assert server.calls[1] == ("raise", RAISED)
        assert not watching.refusing and watching.limits == RAISED
    finally:
        task.cancel()


async def test_guard_when_a_write_fails_with_room_left_restarts_the_store_and_raises(
    tmp_path: Path,
) -> None:
    log = tmp_path / "nats.log"
    log.write_text("[1] [INF] Server is ready\n")
    server, disk = FakeServer(log_path=log), FakeDisk(LOW_FREE + MIB)
    task = asyncio.ensure_future(guard(server, disk).run())
    try:
        await asyncio.sleep(0.1)
        assert server.calls == []
        with log.open("a") as out:
            out.write(
                "[1] [ERR] Filestore [BMDISK_EVENTS] Critical write error: write "
                ".../1.blk: no space left on device\n"
            )
        disk.left = RESUME_FREE  # freed meanwhile: the failed store is opened afresh
        await until_calls(server, 2)
        assert server.calls == [("restart", REFUSING), ("raise", RAISED)]
    finally:
        task.cancel()


async def test_guard_when_the_server_cannot_restart_ends_saying_why() -> None:
    server, disk = FakeServer(fails=True), FakeDisk(0)
    said = await asyncio.wait_for(guard(server, disk).run(), 5)
    assert "nats-server could not be restarted" in said
    assert "0.0 MiB free" in said and "nats-server was not found" in said


async def test_guard_when_the_limit_cannot_be_raised_ends_saying_why() -> None:
    server, disk = FakeServer(reload_fails=True), FakeDisk(LOW_FREE - 1)
    task = asyncio.ensure_future(guard(server, disk).run())
    await until_calls(server, 1)
    disk.left = RESUME_FREE
    said = await asyncio.wait_for(task, 5)
    assert said == "JetStream's store limit could not be raised again: no such process"
