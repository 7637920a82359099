"""Where each object of a scene summary is and how big, in the world (``tools/scene.py:
summary``)."""

from __future__ import annotations

from collections.abc import Iterable

import bpy
import msgspec
from mathutils import Vector

from contracts.scenes import ObjectSummary


def measured(objects: list[ObjectSummary]) -> list[ObjectSummary]:
    """The summaries with their world location, bounds and dimensions. Measured afresh
    each time, not cached with the digests: a parent's move or a modifier changes a
    child's bounds without changing the child's own digest entry."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    by_name = {ob.name: ob for ob in bpy.data.objects}  # .get() searches the list each time
    found: list[ObjectSummary] = []
    for summary in objects:
        ob = by_name.get(summary.name)
        if ob is None:
            found.append(summary)
            continue
        evaluated = ob.evaluated_get(depsgraph)
        world = evaluated.matrix_world
        # Corner 0 of Blender's bound_box is its minimum, corner 6 its maximum: the world
        # box around the turned box is its centre moved, and each axis's half the sum of
        # the turned half-sizes, which is what the eight corners would give, at a third
        # of the cost (this runs for every object at every commit).
        box = evaluated.bound_box
        low, high = Vector(box[0]), Vector(box[6])
        centre, half = world @ ((low + high) / 2), (high - low) / 2
        reach = [sum(abs(world[i][j]) * half[j] for j in range(3)) for i in range(3)]
        found.append(
            msgspec.structs.replace(
                summary,
                dimensions=_rounded(evaluated.dimensions),
                world_location=_rounded(world.translation),
                world_bounds=[
                    _rounded(centre[i] - reach[i] for i in range(3)),
                    _rounded(centre[i] + reach[i] for i in range(3)),
                ],
            )
        )
    return found


def _rounded(values: Iterable[float]) -> list[float]:
    return [round(v, 4) + 0.0 for v in values]  # + 0.0: no -0.0 in what planners read
