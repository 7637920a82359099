"""Every call that writes is held to the geometry budget before what it made can stand.

``touched.call`` tallies the scene (``tally``: estimates from RNA alone, nothing
evaluated) before a writing tool runs and asks ``held`` after it: a call that leaves an
object or the scene over a limit of ``budget``, and further over it than before, fails
with ``invalid_input`` (ARGS_INVALID) and ``mutated=true``, so the executor restores its
checkpoint and nothing it made is committed, inspected or rendered. Comparing with before
keeps a scene that is already over (loaded from a file, or kept under higher limits)
editable: a call that makes it no larger passes.

What RNA cannot tell (a Geometry Nodes tree, a curve object) is measured on the evaluated
scene, and only once everything RNA can tell is within the budget: the estimate is what
stops an ARRAY from making a billion copies, not an evaluation that makes them.
"""

from __future__ import annotations

import logging
import os

from contracts.bridge import ToolResult
from services.bridge import registry
from services.bridge.budget.budget import GeometryBudget
from services.bridge.budget.estimate import Overrides
from services.bridge.budget.tally import Estimates, Tally
from services.bridge.scene.digests import CACHE

log = logging.getLogger("blendmesh.bridge")
BUDGET = GeometryBudget.from_env(os.environ)
ESTIMATES = Estimates()
CACHE.followers.append(ESTIMATES)


def problem(
    before: Tally,
    overrides: Overrides | None = None,
    measure: bool = True,
    budget: GeometryBudget = BUDGET,
) -> str | None:
    """Why the scene would be over the budget, and further over than ``before``; None when
    it is not. ``measure``: evaluate what RNA cannot tell (never with ``overrides``, which
    the evaluated scene does not have yet)."""
    after = ESTIMATES.current(overrides)
    why = _over(after, before, budget)
    if why is None and measure:
        measured = ESTIMATES.measure(after)
        if measured is not after:
            why = _over(measured, before, budget)
    return why


def held(name: str, result: ToolResult, before: Tally) -> ToolResult:
    """``result`` of a call that changed the scene, or a failure when that left the scene
    over the budget; ``before``: the tally from before the call."""
    try:
        why = problem(before)
    except Exception as exc:  # noqa: BLE001 - a bug here must not kill the bridge
        return registry.failed("internal_error", unchecked(name, exc), mutated=True)
    if why is None:
        return result
    return registry.failed("invalid_input", why, mutated=True)


def unchecked(name: str, exc: Exception) -> str:
    """What a call says when its geometry could not be estimated; the estimates are
    forgotten, so the next call starts afresh."""
    log.exception("geometry budget of %s could not be checked", name)
    ESTIMATES.clear()
    return f"the geometry budget could not be checked ({type(exc).__name__}: {exc})"


def _over(after: Tally, before: Tally, budget: GeometryBudget) -> str | None:
    names = after.changed if after.base is before else after.objects.keys()
    for name in names:
        now, was = after.objects.get(name), before.objects.get(name)
        if now is None or now is was:
            continue  # gone, or unchanged: neither new nor further over
        for limit, key in (("object_vertices", "vertices"), ("object_copies", "copies")):
            found = getattr(now, key)
            if found > getattr(budget, limit) and (was is None or found > getattr(was, key)):
                causes = f": {'; '.join(now.causes)}" if now.causes else ""
                return budget.refusal(limit, found, f"object {name!r}", causes)
    for limit, key in (("scene_vertices", "vertices"), ("scene_copies", "copies")):
        total = getattr(after, key)
        if total > getattr(budget, limit) and total > getattr(before, key):
            heaviest = sorted(after.objects.items(), key=lambda i: (-getattr(i[1], key), i[0]))
            named = ", ".join(f"{n!r} {getattr(e, key):,}" for n, e in heaviest[:3])
            return budget.refusal(limit, total, "the scene", f"; the most: {named}")
    return None
