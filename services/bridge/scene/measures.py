"""Where each object of a scene summary is and how big, in the world (``tools/scene.py:
summary``).

Measured afresh at every summary from the evaluated objects, not cached with the digests:
a parent's move or a modifier changes a child's bounds without changing the child's own
digest entry. What is kept between summaries is the arithmetic alone. An object's measures
are a function of its summary and four reads: its world matrix, two corners of its bound
box and its dimensions. When all of them are what they were at the last summary, that
summary's measures are the answer, exactly. A one-prop edit of bench/big_scene.py's scene
(2,000 props) measures one object again, and its summary went from 50-57 ms of Blender's
CPU to 33-41 ms (bench/commit_timeline.py); the reads and the comparison are most of what
is left.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import bpy
import msgspec
from mathutils import Vector

from contracts.scenes import ObjectSummary

# What an object's measures are computed from: its world matrix's rows, its bound box's
# corners 0 and 6, its dimensions.
Reads = tuple[tuple[float, ...], ...]


class Measures:
    """The measured summaries of the last call, by object name, with what they came from."""

    def __init__(self) -> None:
        self._last: dict[str, tuple[ObjectSummary, Reads, ObjectSummary]] = {}
        self.computed = 0  # objects measured afresh, for tests and benchmarks

    def measured(self, objects: list[ObjectSummary]) -> list[ObjectSummary]:
        """``objects`` with their world location, bounds and dimensions."""
        depsgraph = bpy.context.evaluated_depsgraph_get()
        by_name = {ob.name: ob for ob in bpy.data.objects}  # .get() searches the list
        kept: dict[str, tuple[ObjectSummary, Reads, ObjectSummary]] = {}
        found: list[ObjectSummary] = []
        for summary in objects:
            ob = by_name.get(summary.name)
            if ob is None:
                found.append(summary)
                continue
            evaluated = ob.evaluated_get(depsgraph)
            if not was_evaluated(ob, evaluated):
                found.append(summary)  # not measured: what Blender holds is stale
                continue
            world, box = evaluated.matrix_world, evaluated.bound_box
            reads = (*(row[:] for row in world), box[0][:], box[6][:], evaluated.dimensions[:])
            last = self._last.get(summary.name)
            # A changed digest entry makes a new summary, often an equal one.
            if last is not None and last[1] == reads and last[0] == summary:
                result = last[2]
            else:
                result = _measure(summary, world, box, evaluated.dimensions)
                self.computed += 1
            kept[summary.name] = (summary, reads, result)
            found.append(result)
        self._last = kept  # only this call's objects: bounded by the scene
        return found


def was_evaluated(ob: bpy.types.Object, evaluated: bpy.types.Object) -> bool:
    """Whether the depsgraph evaluated ``ob`` (``evaluated`` is its ``evaluated_get``).
    Blender evaluates no object disabled in viewports or in a collection the view layer
    excludes: ``evaluated_get`` gives the original back, whose world matrix and bounds
    are whatever an evaluation left there last, the origin for one never evaluated."""
    return bool(evaluated.as_pointer() != ob.as_pointer())


def _measure(summary: ObjectSummary, world: Any, box: Any, dimensions: Any) -> ObjectSummary:
    # Corner 0 of Blender's bound_box is its minimum, corner 6 its maximum: the world box
    # around the turned box is its centre moved, and each axis's half the sum of the
    # turned half-sizes, which is what the eight corners would give, at a third of the
    # cost (this runs for every object that moved at every commit).
    low, high = Vector(box[0]), Vector(box[6])
    centre, half = world @ ((low + high) / 2), (high - low) / 2
    reach = [sum(abs(world[i][j]) * half[j] for j in range(3)) for i in range(3)]
    return msgspec.structs.replace(
        summary,
        dimensions=_rounded(dimensions),
        world_location=_rounded(world.translation),
        world_bounds=[
            _rounded(centre[i] - reach[i] for i in range(3)),
            _rounded(centre[i] + reach[i] for i in range(3)),
        ],
    )


def _rounded(values: Iterable[float]) -> list[float]:
    return [round(v, 4) + 0.0 for v in values]  # + 0.0: no -0.0 in what planners read


MEASURES = Measures()
