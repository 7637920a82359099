"""The scene's geometry as estimated, kept up to date at the cost of what changed.

Each object's estimate (``estimate``) is cached with the names it read, and dropped by the
same events as the scene hash's digests (``digests.DigestCache.followers``): a tool's
declared touches, the depsgraph's reports, a file loaded. A tally after a call recomputes
the objects dropped since the last one and carries the scene's totals along, so a call
costs what it touched, not a pass over every object's modifiers.

What RNA cannot tell is measured here on the evaluated scene (``measure``): a Geometry
Nodes object's geometry set, with the instances it holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import bpy

from services.bridge.budget.estimate import MEASURED_TYPES, Estimate, Estimator, Overrides
from services.bridge.scene.digests import CACHE

MAX_NESTING = 8  # instances of instances: deeper than any real tree goes


@dataclass(frozen=True)
class Tally:
    """Every object's estimate by name, and the scene's totals. ``changed``: the objects
    estimated afresh since ``base``, the tally before it (None: all of them)."""

    objects: dict[str, Estimate]
    vertices: int
    copies: int
    changed: frozenset[str] = frozenset()
    base: Tally | None = field(default=None, repr=False)

    @classmethod
    def of(cls, objects: dict[str, Estimate]) -> Tally:
        vertices = sum(e.vertices for e in objects.values())
        return cls(objects, vertices, sum(e.copies for e in objects.values()), frozenset(objects))

    def then(self, changed: dict[str, Estimate | None]) -> Tally:
        """This tally with the estimates in ``changed`` (None: the object is gone)."""
        objects = dict(self.objects)
        vertices, copies = self.vertices, self.copies
        for name, now in changed.items():
            was = objects.pop(name, None)
            if was is not None:
                vertices, copies = vertices - was.vertices, copies - was.copies
            if now is not None:
                objects[name] = now
                vertices, copies = vertices + now.vertices, copies + now.copies
        return Tally(objects, vertices, copies, frozenset(changed), self)


class Estimates:
    """The cache: each object's estimate and the names it read, and the last tally."""

    def __init__(self) -> None:
        self.entries: dict[str, tuple[Estimate, frozenset[str]]] = {}
        self._readers: dict[str, set[str]] = {}  # a name -> the entries that read it
        self._unmeasured: set[str] = set()  # entries only evaluation can tell
        self._last: Tally | None = None
        self._stale: set[str] = set()  # names dropped or touched since the last tally

    def clear(self) -> None:
        self.entries.clear()
        self._readers.clear()
        self._unmeasured.clear()
        self._last = None
        self._stale.clear()

    def invalidate(self, names: set[str]) -> None:
        if not names:
            return
        dropped = {n for n in names if n in self.entries}
        for name in names:
            dropped.update(self._readers.get(name, ()))
        for name in dropped:
            _, refs = self.entries.pop(name)
            self._unmeasured.discard(name)
            for ref in refs:
                self._readers[ref].discard(name)
        self._stale.update(dropped, names)

    def current(self, overrides: Overrides | None = None) -> Tally:
        """The scene as it is; with ``overrides``, as it would be with those values (the
        objects they change are estimated afresh, and nothing of that is kept)."""
        self.invalidate(CACHE.pending)  # the depsgraph's reports, which the digests read later
        if overrides:
            return self._with(overrides)
        scene = bpy.context.scene.objects
        last = self._last
        estimator = Estimator()
        if last is not None and not self._stale:
            return last
        if last is not None:
            changed: dict[str, Estimate | None] = {}
            for name in self._stale:
                ob = scene.get(name)
                if ob is not None or name in last.objects:
                    changed[name] = None if ob is None else self._of(ob, estimator)
            tally = last.then(changed)
            if len(tally.objects) == len(scene):
                return self._remember(tally)
        # The first tally, or an object came or went undeclared: count afresh.
        return self._remember(Tally.of({ob.name: self._of(ob, estimator) for ob in scene}))

    def measure(self, tally: Tally) -> Tally:
        """``tally`` with the evaluated counts in place of RNA's for what RNA could not tell
        (kept in the cache: only what changed since is evaluated again)."""
        waiting = [n for n in self._unmeasured if n in tally.objects]
        if not waiting:
            return tally
        depsgraph = bpy.context.evaluated_depsgraph_get()
        estimator = Estimator()
        changed: dict[str, Estimate | None] = {}
        for name in waiting:
            estimate, refs = self.entries[name]
            changed[name] = measured = _measured(
                bpy.data.objects[name], estimate, depsgraph, estimator
            )
            self.entries[name] = (measured, refs)
            self._unmeasured.discard(name)
        done = tally.then(changed)
        if tally.base is not None:  # still the change since the tally before
            done = replace(done, changed=tally.changed | done.changed, base=tally.base)
        if self._last is tally:
            self._last = done
        return done

    def _of(self, ob: bpy.types.Object, estimator: Estimator) -> Estimate:
        entry = self.entries.get(ob.name)
        if entry is None:
            entry = self.entries[ob.name] = (estimator.of(ob), estimator.refs[ob.name])
            for ref in entry[1]:
                self._readers.setdefault(ref, set()).add(ob.name)
            if entry[0].measure:
                self._unmeasured.add(ob.name)
        return entry[0]

    def _remember(self, tally: Tally) -> Tally:
        self._last = tally
        self._stale.clear()
        return tally

    def _with(self, overrides: Overrides) -> Tally:
        base = self.current()
        affected = {name for name, _ in overrides}
        for name in list(affected):
            affected.update(self._readers.get(name, ()))
        scene = bpy.context.scene.objects
        estimator = Estimator(overrides)
        return base.then({n: estimator.of(scene[n]) for n in affected if n in scene})


def _measured(
    ob: bpy.types.Object, estimate: Estimate, depsgraph: Any, estimator: Estimator
) -> Estimate:
    """``estimate`` with the evaluated geometry's counts; the instances the object makes
    as a whole (a collection, particles) are not in its geometry and stay as estimated."""
    if ob.type not in MEASURED_TYPES | {"MESH"}:
        return replace(estimate, measured=True)
    try:
        geometry = ob.evaluated_get(depsgraph).evaluated_geometry()
    except (TypeError, RuntimeError):
        return replace(estimate, measured=True)
    vertices, copies = _geometry(geometry, estimator, 0)
    made, drawn = estimate.instanced
    evaluated = f"its evaluated geometry ({vertices:,} vertices, {copies:,} copies)"
    return replace(
        estimate,
        vertices=vertices + drawn,
        copies=max(copies, estimate.copies - made) + made,
        causes=[*estimate.causes, evaluated],
        measured=True,
    )


def _geometry(geometry: Any, estimator: Estimator, depth: int) -> tuple[int, int]:
    """(vertices, copies) of an evaluated geometry set, its instances' included."""
    vertices = 0
    for part, elements in (("mesh", "vertices"), ("pointcloud", "points"), ("curves", "points")):
        data = getattr(geometry, part, None)
        if data is not None:
            vertices += len(getattr(data, elements))
    points = geometry.instances_pointcloud()
    count = len(points.points) if points is not None else 0
    if not count:
        return vertices, 1
    inner = [_reference(r, estimator, depth + 1) for r in geometry.instance_references()]
    each_vertices = max((v for v, _ in inner), default=0)
    each_copies = max((c for _, c in inner), default=1)
    return vertices + count * each_vertices, count * each_copies


def _reference(reference: Any, estimator: Estimator, depth: int) -> tuple[int, int]:
    if isinstance(reference, bpy.types.Object):
        estimate = estimator.of(reference.original)
        return estimate.vertices, estimate.copies
    if isinstance(reference, bpy.types.Collection):
        members = [estimator.of(o.original) for o in reference.all_objects]
        return sum(m.vertices for m in members), max(1, sum(m.copies for m in members))
    if depth > MAX_NESTING:
        return 0, 1
    return _geometry(reference, estimator, depth)
