"""The scene hash as a combination of per-datablock digests, and the cache that keeps them.

Each object (with its modifiers, mesh statistics, camera or light, keyframes, ...), each
used material, each evaluated node group and the scene-level part (active camera, world,
collections) is hashed on its own; the scene hash is sha256 over the sorted
(kind, name, digest) rows, so it never depends on the order Blender lists things in.

The cache keeps the digests between calls and drops those a tool declared it touches
(``registry.Touches``), plus whatever Blender's depsgraph reports as updated whenever it
evaluates. A dropped digest is recomputed on the next fingerprint, so one operation costs
what it touched plus one pass over the object names, not a pass over the whole scene.
``full_hash`` recomputes everything from the snapshot and is what a commit stores
(ADR 0012); the two always agree unless a declaration is wrong, which a commit detects.

Each entry also keeps the value it hashed, so the ``scene.snapshot`` tool is assembled
from the cache at the same cost as the hash, instead of describing every object again.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import bpy
import msgspec

from services.bridge.scene import fingerprint, scene_state
from services.bridge.scene.canonical import canonical_json

log = logging.getLogger("blendmesh.bridge")

# Part of every combined hash, so a future change of the rows cannot collide with these.
FORMAT = "blendmesh-scene-digests/1"
SNAPSHOT_PARTS = ("objects", "materials", "node_groups")
_PARTS = ("object", "material", "node_group")  # the kinds of cached entries
INDEX_FROM = 16  # objects to hash afresh from which their collections are indexed first


def digest(value: Any) -> str:
    """sha256 hex of one entry's canonical JSON."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def combine(rows: Iterable[tuple[str, str, str]]) -> str:
    """The scene hash from (kind, name, digest) rows, in any order."""
    ordered = sorted([kind, name, dig] for kind, name, dig in rows)
    return hashlib.sha256(canonical_json([FORMAT, ordered]).encode("utf-8")).hexdigest()


def snapshot_rows(snap: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The rows of a canonical snapshot (``fingerprint.snapshot``)."""
    rows = [("object", o["name"], digest(o)) for o in snap["objects"]]
    rows += [("material", m["name"], digest(m)) for m in snap["materials"]]
    rows += [("node_group", g["name"], digest(g)) for g in snap.get("node_groups", [])]
    rows.append(("scene", "", digest({k: v for k, v in snap.items() if k not in SNAPSHOT_PARTS})))
    return rows


def snapshot_hash(snap: dict[str, Any]) -> str:
    """The scene hash of a snapshot: what the ``scene.snapshot`` tool reports."""
    return combine(snapshot_rows(snap))


def full_hash() -> str:
    """The scene hash recomputed from nothing; never reads or changes the cache."""
    return snapshot_hash(fingerprint.snapshot())


def _strings(value: Any, found: set[str]) -> None:
    if isinstance(value, str):
        found.add(value)
    elif isinstance(value, dict):
        for item in value.values():
            _strings(item, found)
    elif isinstance(value, list):
        for item in value:
            _strings(item, found)


@dataclass(frozen=True)
class Entry:
    """One cached digest and the snapshot ``value`` it was computed from (never handed
    out: ``DigestCache.snapshot`` copies it). ``refs``: every name its JSON mentions (the
    snapshot refers to other datablocks by name) plus data it reads without naming, so
    touching any of them drops it. ``materials`` and ``groups``: what it brings into the
    scene hash."""

    digest: str
    refs: frozenset[str]
    value: dict[str, Any]
    materials: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()


def _entry(
    value: dict[str, Any],
    extra: Iterable[str] = (),
    materials: Iterable[str] = (),
    groups: Iterable[str] = (),
) -> Entry:
    refs: set[str] = set(extra)
    _strings(value, refs)
    return Entry(digest(value), frozenset(refs), value, tuple(materials), tuple(groups))


def action_name(ob: bpy.types.Object) -> str | None:
    """The action animating the object (duplicates share it), if any."""
    anim = ob.animation_data
    return anim.action.name if anim is not None and anim.action is not None else None


def node_groups_of(ob: bpy.types.Object) -> list[str]:
    """The node groups the object's Geometry Nodes modifiers evaluate."""
    return [m.node_group.name for m in ob.modifiers if m.type == "NODES" and m.node_group]


def nested_groups(group: bpy.types.NodeTree) -> list[str]:
    """The groups a node group's group nodes evaluate."""
    return [n.node_tree.name for n in group.nodes if getattr(n, "node_tree", None)]


def _object_entry(ob: bpy.types.Object) -> Entry:
    action = action_name(ob)
    return _entry(
        fingerprint.object_json(ob),
        extra=[action] if action else [],
        materials=[s.material.name for s in ob.material_slots if s.material is not None],
        groups=node_groups_of(ob),
    )


class Follower(Protocol):
    """Another cache of facts about the scene's datablocks (``bounded``'s estimates), kept
    true by the same events as the digests: it forgets what they forget."""

    def clear(self) -> None: ...

    def invalidate(self, names: set[str]) -> None: ...


class DigestCache:
    """Digests of the current scene's datablocks, by (kind, name)."""

    def __init__(self) -> None:
        self.entries: dict[tuple[str, str], Entry] = {}
        self.pending: set[str] = set()  # names the depsgraph reported, dropped next time
        self.followers: list[Follower] = []
        # A file was loaded (or the scene reset) and no request that may change the scene
        # came since (``changing``): every entry is computed from the scene as it is, none
        # kept on a tool's declaration. A full hash could find nothing the cache missed,
        # so ``checked_hash`` skips it: a commit right after a load (an import, a revert)
        # hashes a big scene once, not twice.
        self.whole = False
        # The last combination: the entries it combined, the digest of the scene-level
        # part and the scene hash. Combining thousands of rows again when every entry is
        # the very one combined then costs more than finding that out.
        self._combined: tuple[dict[tuple[str, str], Entry], str, str] | None = None

    def loaded(self) -> None:
        """The scene was just replaced and hashed from nothing (``scene.load``, ``reset``)."""
        self.whole = True

    def changing(self) -> None:
        """A request that may change the scene is about to run: a digest kept past it
        rests on a tool's declaration, which only a full hash can check."""
        self.whole = False

    def clear(self) -> None:
        """Forget everything (a file was loaded, or the scene replaced)."""
        self.entries.clear()
        self.pending.clear()
        self._combined = None
        for follower in self.followers:
            follower.clear()

    def invalidate(self, names: Iterable[str]) -> None:
        """Drop every entry that is, names or reads any of ``names``."""
        touched = set(names)
        if touched:
            self.entries = {
                key: e
                for key, e in self.entries.items()
                if key[1] not in touched and touched.isdisjoint(e.refs)
            }
            for follower in self.followers:
                follower.invalidate(touched)

    def scene_hash(self) -> tuple[str, int]:
        """The scene hash from the cached digests, recomputing those that were dropped;
        and the number of objects."""
        scene_hash, _ = self._refresh()
        return scene_hash, len(bpy.context.scene.objects)

    def current(self) -> Mapping[tuple[str, str], Entry]:
        """Every entry of the scene as it is now, dropped ones recomputed (what a
        fingerprint would combine). Not to be changed; valid until the next call that
        drops or recomputes entries. The inspection's parts rest on them (``parts``)."""
        self._refresh()
        return self.entries

    def snapshot(self) -> tuple[dict[str, Any], str]:
        """``fingerprint.snapshot()`` and its hash, from the cached values: only dropped
        entries are described again. The snapshot is a copy, so a caller that changes it
        cannot change the cache."""
        scene_hash, scene_part = self._refresh()
        parts: dict[str, list[dict[str, Any]]] = {kind: [] for kind in _PARTS}
        # By name within each kind, the order ``fingerprint.snapshot`` lists them in.
        for (kind, _), entry in sorted(self.entries.items(), key=lambda item: item[0]):
            parts[kind].append(entry.value)
        snap: dict[str, Any] = {"objects": parts["object"], "materials": parts["material"]}
        if parts["node_group"]:  # as in ``fingerprint.snapshot``: only when there are any
            snap["node_groups"] = parts["node_group"]
        snap.update(scene_part)
        # to_builtins builds new dicts and lists all the way down, in C.
        return msgspec.to_builtins(snap), scene_hash

    def _refresh(self) -> tuple[str, dict[str, Any]]:
        self.invalidate(self.pending)
        self.pending.clear()
        try:
            return self._compute()
        except KeyError as err:
            # A cached entry names a material or group that is gone: it was stale.
            log.error("digest cache named a datablock that is gone (%s); rebuilding it", err)
            self.clear()
            return self._compute()

    def _compute(self) -> tuple[str, dict[str, Any]]:
        scene = bpy.context.scene
        fresh: dict[tuple[str, str], Entry] = {}
        materials: set[str] = set()
        stack: list[str] = []
        objects = [(("object", ob.name), ob) for ob in scene.objects]
        missing = sum(1 for key, _ in objects if key not in self.entries)
        # Each object's collections, asked of Blender, list every collection's objects:
        # hashing many objects from nothing (a load) indexes them once instead, as a full
        # hash does; a few dropped digests are cheaper without the index.
        index = scene_state.membership() if missing > INDEX_FROM else contextlib.nullcontext()
        with index:
            for key, ob in objects:
                entry = self.entries.get(key) or _object_entry(ob)
                fresh[key] = entry
                materials.update(entry.materials)
                stack.extend(entry.groups)
        for name in materials:
            key = ("material", name)
            fresh[key] = self.entries.get(key) or _entry(
                fingerprint.material_values(bpy.data.materials[name])
            )
        while stack:
            key = ("node_group", stack.pop())
            if key in fresh:
                continue
            cached = self.entries.get(key)
            if cached is None:
                group = bpy.data.node_groups[key[1]]
                cached = _entry(fingerprint.node_group_json(group), groups=nested_groups(group))
            fresh[key] = cached
            stack.extend(cached.groups)
        self.entries = fresh
        scene_part = scene_state.scene_state(scene)
        scene_digest = digest(scene_part)
        last = self._combined
        if last is not None and last[1] == scene_digest and _same(last[0], fresh):
            return last[2], scene_part
        rows = [(kind, name, e.digest) for (kind, name), e in fresh.items()]
        rows.append(("scene", "", scene_digest))
        scene_hash = combine(rows)
        self._combined = (dict(fresh), scene_digest, scene_hash)
        return scene_hash, scene_part

    def checked_hash(self) -> str:
        """The full hash, after comparing it with the cached one: a difference means a
        tool changed something it did not declare. It is logged and the cache rebuilt, and
        the full hash returned, so a commit compares against the truth (ADR 0012). When
        every digest was computed since the last request that could change the scene
        (``whole``), the cached hash is the full one and is not computed twice (ADR 0032)."""
        cached, _ = self.scene_hash()
        if self.whole:
            return cached
        full = full_hash()
        if cached != full:
            log.error(
                "digest cache was stale: cached scene hash %s, full %s; rebuilding it",
                cached[:12],
                full[:12],
            )
            self.clear()
        return full


def _same(combined: dict[tuple[str, str], Entry], entries: dict[tuple[str, str], Entry]) -> bool:
    """Whether ``entries`` are, one for one, the entry objects ``combined`` holds."""
    return len(combined) == len(entries) and all(combined.get(k) is e for k, e in entries.items())


CACHE = DigestCache()


def reported(update: bpy.types.DepsgraphUpdate) -> bool:
    """Whether a depsgraph update says its ID may have changed. After a change of
    relations (a modifier, a parent, a material added anywhere) Blender reports every
    object with only the shading flag set; the objects that did change carry the geometry
    or transform flag, so shading-only object updates would only drop digests in vain."""
    if not isinstance(update.id, bpy.types.Object):
        return True
    flags = (update.is_updated_geometry, update.is_updated_transform, update.is_updated_shading)
    return flags != (False, False, True)


@bpy.app.handlers.persistent
def _depsgraph_updated(scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph) -> None:
    # Blender only reports updates when something evaluates the depsgraph (in background
    # mode a data API edit alone does not), so this is a safety net, not the mechanism.
    CACHE.pending.update(u.id.name for u in depsgraph.updates if reported(u))


@bpy.app.handlers.persistent
def _replaced(*_: Any) -> None:
    # ``scene.load`` and ``scene.reset`` clear the cache themselves; these events say the
    # same of any other way the scene is replaced (a file opened, an undo step), so no
    # digest, nor anything that follows them, outlives the scene it described.
    CACHE.clear()


# Blender's events after which the scene is another one.
REPLACING = ("load_post", "load_factory_startup_post", "undo_post", "redo_post")


def install() -> None:
    """Listen to the depsgraph and to whatever replaces the scene (once per process;
    persistent across file loads)."""
    handlers = bpy.app.handlers.depsgraph_update_post
    if _depsgraph_updated not in handlers:
        handlers.append(_depsgraph_updated)
    for event in REPLACING:
        listeners = getattr(bpy.app.handlers, event)
        if _replaced not in listeners:
            listeners.append(_replaced)
