"""An executor's pool of lanes: each lane one Blender bridge with the scene it holds warm,
so independent scenes' runs go side by side on one executor (ADR 0070).

A run asks for a lane for its scene. Runs on one scene in this executor queue for the lane
that serves it, one after the other; across executors the scene's lease still fences them
(each lane leases as an owner of its own). A free lane is chosen by what it saves: the one
already holding the scene, then a running Blender holding nothing, then a stopped Blender
(it starts, rather than another scene's warm hold being thrown away), and last the lane
whose warm scene was used longest ago.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from contracts.errors import BlendmeshError
from contracts.limits import MAX_BRIDGES

# Memory one bridge is sized at: Blender idle plus a warm scene of a few hundred MB.
BRIDGE_BYTES = 600 * 1024 * 1024

R = TypeVar("R")


class PoolSizeError(BlendmeshError, ValueError):
    """A pool size outside 1..MAX_BRIDGES was asked for."""


def pool_size(asked: int | None, available_bytes: int | None) -> int:
    """How many bridges an executor keeps: ``asked`` when given (1..MAX_BRIDGES), else as
    many as the available memory holds, at least one and at most the limit.

    Not one per core (ADR 0078): a lane is worth the scene it keeps warm, not a core. A
    warm bridge spends a few hundredths of a core at the runs it serves, while a run on a
    scene no lane holds loads the file first; with fewer lanes than scenes in use, every
    run paid that load and one executor served 9-10 runs/s where one lane per scene
    served 28-30."""
    if asked is not None:
        if not 1 <= asked <= MAX_BRIDGES:
            raise PoolSizeError(
                f"BLENDMESH_BRIDGES={asked} is out of range; use 1 to {MAX_BRIDGES} "
                "(each bridge is a Blender process of its own)"
            )
        return asked
    by_memory = MAX_BRIDGES if available_bytes is None else available_bytes // BRIDGE_BYTES
    return max(1, min(by_memory, MAX_BRIDGES))


@dataclass
class Lane(Generic[R]):
    """One bridge and the runner bound to it."""

    index: int
    runner: R
    holds: Callable[[], str | None]  # the scene its Blender holds now, if any
    running: Callable[[], bool]  # whether its Blender runs (a parked one does not)
    scene: str | None = None  # the scene of the run it serves now; None: free
    used: float = 0.0  # when its last run ended, on the pool's clock


@dataclass
class LanePool(Generic[R]):
    lanes: Sequence[Lane[R]]
    clock: Callable[[], float] = time.monotonic
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition, init=False)

    def __post_init__(self) -> None:
        if not self.lanes:
            raise PoolSizeError("a lane pool needs at least one lane")

    @property
    def busy(self) -> int:
        return sum(lane.scene is not None for lane in self.lanes)

    @contextlib.asynccontextmanager
    async def lane(self, scene_id: str) -> AsyncIterator[R]:
        """Hold a lane for one run on ``scene_id``; waits while this executor runs that
        scene on another lane, or while every lane is busy."""
        async with self._changed:
            chosen = await self._changed.wait_for(lambda: self._choose(scene_id))
            assert chosen is not None
            chosen.scene = scene_id
        try:
            yield chosen.runner
        finally:
            async with self._changed:
                chosen.scene = None
                chosen.used = self.clock()
                self._changed.notify_all()

    def _choose(self, scene_id: str) -> Lane[R] | None:
        if any(lane.scene == scene_id for lane in self.lanes):
            return None  # one run at a time per scene: wait for that lane to be free
        free = [lane for lane in self.lanes if lane.scene is None]
        if not free:
            return None
        for lane in free:
            if lane.holds() == scene_id:
                return lane
        empty = [lane for lane in free if lane.running() and lane.holds() is None]
        if empty:
            return empty[0]
        stopped = [lane for lane in free if not lane.running()]
        if stopped:
            return stopped[0]
        return min(free, key=lambda lane: lane.used)
