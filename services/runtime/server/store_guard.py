"""Keeping a full disk an error a request hears, not a mesh that hangs.

``store_limits`` keeps JetStream below the disk when the mesh starts, but something else
may fill the disk afterwards. nats-server then fails a write with "no space left on
device", marks that stream's store failed, and answers no write to it again, not even once
space is freed: every request waits out its timeout (jetstream_watch). Its limit cannot be
lowered by a reload, only raised.

So the guard watches the disk and the server's log. When the disk's free space falls
under ``LOW_FREE``, or a write has failed, it restarts the server (same port, same store;
clients reconnect by themselves) with a store limit of one byte: JetStream then refuses
every write at once with "insufficient resources", which every door reports as a full
store, and a failed store is opened afresh. Once ``RESUME_FREE`` is free again it raises
the limit to what ``store_limits`` allows, by a reload, and the mesh works again. Nothing
JetStream acknowledged is lost on the way: it syncs every write, and a write it could not
store was never acknowledged.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Protocol

from contracts.errors import BlendmeshError
from services.runtime.server import jetstream_watch
from services.runtime.service.host import first_of
from services.runtime.service.store_limits import MIB, MIN_STORE, StoreLimits, store_limits

log = logging.getLogger("blendmesh.store")

# Free bytes under which JetStream stops taking writes: one more block written onto a
# fuller disk could fail half-way. The gap to RESUME_FREE keeps a disk near the line from
# turning the store on and off with every file written beside it.
LOW_FREE = 4 * MIB
RESUME_FREE = MIN_STORE  # the least a raised limit gives JetStream (store_limits)
REFUSING = StoreLimits(file_store=1)  # nats-server takes no 0; below what any store holds
INTERVAL = 1.0  # seconds between two looks at the disk


class GuardedServer(Protocol):
    """What the guard needs of the embedded nats-server (``EmbeddedNats``)."""

    @property
    def log_path(self) -> Path | None: ...

    async def restart(self, limits: StoreLimits) -> str: ...

    async def raise_limits(self, limits: StoreLimits) -> None: ...


Free = Callable[[], Awaitable[int]]  # the disk's free bytes, now
Limits = Callable[[], Awaitable[StoreLimits]]  # what store_limits allows, now


def disk_free(store_dir: Path) -> Free:
    async def free() -> int:
        return (await asyncio.to_thread(shutil.disk_usage, store_dir)).free

    return free


def limits_for(store_dir: Path, env: Mapping[str, str]) -> Limits:
    async def limits() -> StoreLimits:
        return await asyncio.to_thread(store_limits, store_dir, env)

    return limits


async def _short_of_space(free: Free, interval: float) -> str:
    while True:
        left = await free()
        if left < LOW_FREE:
            return (
                f"the disk has {left / MIB:.1f} MiB free, under the {LOW_FREE // MIB} MiB it needs"
            )
        await asyncio.sleep(interval)


async def _room_again(free: Free, interval: float) -> int:
    while True:
        left = await free()
        if left >= RESUME_FREE:
            return left
        await asyncio.sleep(interval)


class StoreGuard:
    """Turns a full disk into a store that refuses writes, and back (module docstring).

    ``limits`` is what the server runs with now; ``refusing`` says whether it refuses
    every write for lack of space.
    """

    def __init__(
        self,
        server: GuardedServer,
        free: Free,
        limits: Limits,
        current: StoreLimits | None,
        interval: float = INTERVAL,
    ) -> None:
        self._server = server
        self._free = free
        self._limits = limits
        self.limits = current
        self.refusing = False
        self._interval = interval

    async def run(self) -> str:
        """Guard for ever; return, saying why, only when the server could not be restarted
        or its limit raised again (the mesh then stops loudly)."""
        while True:
            why = await self._until_short()
            log.error(
                "JetStream stops taking writes: %s; free space where the mesh keeps its home "
                "and it takes them again",
                why,
            )
            try:
                await self._server.restart(REFUSING)
            except (BlendmeshError, OSError) as exc:  # it cannot start: nothing left to guard
                return f"nats-server could not be restarted after {why}: {exc}"
            self._set(REFUSING, refusing=True)
            left = await _room_again(self._free, self._interval)
            raised = await self._limits()
            try:
                await self._server.raise_limits(raised)
            except (BlendmeshError, OSError) as exc:  # it died meanwhile, or its config
                return f"JetStream's store limit could not be raised again: {exc}"
            log.warning(
                "JetStream takes writes again: %.0f MiB free; %s", left / MIB, raised.report()
            )
            self._set(raised, refusing=False)

    async def _until_short(self) -> str:
        """Why the store must stop taking writes: the disk is nearly full, or a write
        failed (the disk filled between two looks)."""
        waits = [_short_of_space(self._free, self._interval)]
        log_path = self._server.log_path
        if log_path is not None:
            waits.append(jetstream_watch.write_failed(log_path, self._interval))
        return await first_of(waits)

    def _set(self, limits: StoreLimits, refusing: bool) -> None:
        self.limits, self.refusing = limits, refusing
