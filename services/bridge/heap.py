"""The bridge's Python heap between requests.

A big scene's digest cache (ADR 0012) and inspection parts (ADR 0036) hold a few hundred
thousand long-lived objects: a value per datablock, nested dicts and lists. Every full pass
of Python's cyclic garbage collector walks all of them, and a commit's full hash allocates
enough to start such passes: on the 2,002-object scene of ``bench/big_scene.py`` they added
up to 0.1 s to a request now and then. So the heap is frozen (``gc.freeze``) once a scene is
loaded and after each commit's check, when what is alive is what the scene's cache keeps:
frozen objects are left out of every pass, and are still freed as soon as nothing refers to
them. Cycles among them would wait for the next load, which unfreezes and collects first.
"""

from __future__ import annotations

import gc

# After these the heap is what the scene's caches keep.
SETTLED_BY = frozenset({"blendmesh/scene.load", "blendmesh/scene.reset", "blendmesh/scene.verify"})
# These replace the scene: what the old one kept is garbage the next pass must see.
REPLACING = frozenset({"blendmesh/scene.load", "blendmesh/scene.reset"})


def before(method: str) -> None:
    if method in REPLACING:
        gc.unfreeze()


def after(method: str) -> None:
    if method in REPLACING:
        gc.collect()  # the old scene's cycles, before they are frozen with the new one
    if method in SETTLED_BY:
        gc.freeze()
