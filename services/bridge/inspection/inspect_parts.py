"""The parts of the inspection artifact kept between calls, each beside the digest it rests on.

An object's, a used material's and a used node group's part of ``blendmesh/scene.inspect``
is kept with the entry the digest cache (``digests.CACHE``) held for the same datablock
when the part was described. It is reused only while the cache still holds that very
entry (``is``, not equality): the cache drops an entry for everything it learns, a tool's
declared touches and the depsgraph's reports of what it evaluated again, so an entry that
is still there vouches that nothing the part reads changed. A part held by no entry (a
material or node group no object of the scene uses) is described on every call.

What the digests do not see is handled as they handle it: the cache is cleared by a load,
a reset, a Python step, a failed write and a stale digest found at a save, and it clears
these parts with it (they follow it, as ``tally``'s estimates do); a stored part always
holds a live entry object, so no new entry can ever be mistaken for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar, cast

from services.bridge.scene.digests import CACHE, Entry

T = TypeVar("T")
Key = tuple[str, str]  # (kind, name), as the digest cache's keys


class Parts:
    """Described parts by (kind, name), each with the digest entry it was described beside."""

    def __init__(self) -> None:
        self.kept: dict[Key, tuple[Entry, object]] = {}
        self.described = 0  # parts the last kept description described afresh

    def clear(self) -> None:
        self.kept.clear()

    def invalidate(self, names: Iterable[str]) -> None:
        # The digest cache drops the entries these parts rest on, which is what makes them
        # stale; forgetting the parts named here only frees them sooner.
        for name in names:
            for kind in ("object", "material", "node_group"):
                self.kept.pop((kind, name), None)

    def round(self, entries: Mapping[Key, Entry]) -> Round:
        """One description of the scene, reusing what ``entries`` (the digest cache's,
        current) still vouch for."""
        return Round(self, entries)


class Round:
    """The parts one description uses; ``done`` keeps them, and only them, for the next."""

    def __init__(self, parts: Parts | None, entries: Mapping[Key, Entry]) -> None:
        self.parts = parts
        self.entries = entries
        self.fresh: dict[Key, tuple[Entry, object]] = {}
        self.described = 0  # parts described afresh (the rest were reused)

    def part(self, kind: str, name: str, describe: Callable[[], T]) -> T:
        """The part of the datablock ``name``: kept, when the entry it was described
        beside is still the cache's; otherwise ``describe()``."""
        key = (kind, name)
        entry = self.entries.get(key)
        kept = None if self.parts is None else self.parts.kept.get(key)
        value: object
        if entry is not None and kept is not None and kept[0] is entry:
            value = kept[1]  # stored by this call under the same key, so of the same type
        else:
            value = describe()
            self.described += 1
        if entry is not None:
            self.fresh[key] = (entry, value)
        return cast(T, value)

    def done(self) -> None:
        """Keep this round's parts: what the scene no longer has is forgotten."""
        if self.parts is not None:
            self.parts.kept = self.fresh
            self.parts.described = self.described


def fresh_round() -> Round:
    """A description that reuses nothing and keeps nothing: the full computation."""
    return Round(None, {})


PARTS = Parts()
CACHE.followers.append(PARTS)
