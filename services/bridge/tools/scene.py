"""Scene-level operations: the read-only snapshot tool and the blendmesh/scene.* methods.

The methods (reset/load/save/fingerprint) are not MCP tools: the executor uses
them for checkpoints and persistence, so they report failures as SceneError
(JSON-RPC -32000) rather than as ToolResults; a file ``load`` refuses before touching
the scene is SceneRefused (-32602, invalid params: the scene is as it was).

``fingerprint`` and the snapshot tool answer from the digest cache; whatever replaces
the scene (reset, load) clears it, and ``save`` (a checkpoint or a commit) hashes the
scene in full and checks the cache against it (ADR 0012), unless nothing but reads came
since the load, when the cache holds the full hash already (ADR 0032).
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import bpy

from contracts import libraries
from contracts.bridge import Fingerprint, FullSnapshot, HashScheme, SavedScene, SceneHash
from contracts.errors import BlendmeshError
from contracts.scenes import (
    MaterialSummary,
    ObjectSummary,
    SceneSummary,
    material_summary,
    object_summary,
)
from services.bridge.blendfiles import blendfile, references, shelf
from services.bridge.scene import digests, fingerprint, measures

from ..registry import Outcome, tool
from .answers import NUMBER, RGBA, STRING, answer

# The snapshot the scene hash is computed from: every object, the materials they use,
# their Geometry Nodes groups (only when there are any) and the scene-level state
# (cameras, lights, world, collections, ...), open to what a Blender version adds.
_ENTRIES: dict[str, Any] = {"type": "array", "items": {"type": "object"}}
SNAPSHOT: dict[str, Any] = {
    "type": "object",
    "required": ["hash", "materials", "objects"],
    "properties": {
        "hash": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
        "objects": _ENTRIES,
        "materials": {
            "type": "array",
            "items": answer(
                {"name": STRING, "base_color": RGBA, "metallic": NUMBER, "roughness": NUMBER}
            ),
        },
        "node_groups": {**_ENTRIES, "minItems": 1},
    },
}


class SceneError(BlendmeshError):
    """A scene method failed (missing file, unwritable path, Blender refused)."""


class SceneRefused(SceneError):
    """``load`` refused the file (it is not one Blender can read, or it refers to data
    outside itself). ``changed`` is False when it was refused before the scene was
    touched, True when the scene was emptied."""

    def __init__(self, message: str, changed: bool = False) -> None:
        super().__init__(message)
        self.changed = changed


@tool(
    name="scene.snapshot",
    description=(
        "Full canonical description of the scene (every object, modifier and used material, "
        "cameras, lights, the world, collections and keyframes; never truncated) plus its "
        "hash. Rotations here are radians, as Blender stores them."
    ),
    input_schema={"type": "object", "additionalProperties": False, "properties": {}},
    output_schema=SNAPSHOT,
    safety_level="read_only",
    idempotence_class="idempotent",
    compensation="none",
)
def snapshot(args: dict[str, Any]) -> Outcome:
    """Return the snapshot the hash is computed from, so callers can see what changed.
    Assembled from the digest cache: the executor asks for it at every commit, so it costs
    what changed since the last hash, not a description of every object (ADR 0012)."""
    snap, scene_hash = digests.CACHE.snapshot()
    data = {**snap, "hash": scene_hash}
    return Outcome(data=data, mutated=False, message=f"{len(snap['objects'])} objects")


def reset() -> SceneHash:
    """Replace everything with Blender's empty factory scene."""
    digests.CACHE.clear()
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene_hash = digests.CACHE.scene_hash()[0]
    digests.CACHE.loaded()
    return SceneHash(hash=scene_hash)


def load(path: str) -> SceneHash:
    """Open a .blend file as the current scene, if it holds everything it refers to but
    the libraries of its project the executor put beside it (shelf.py).

    A file that links any other library or refers to an external file is refused before
    Blender opens it, which would read the library from the host's disk (references.py); what
    only the opened file shows (a modifier's cache, a strip's movie) is refused after,
    with the scene emptied. Errors name the file by its last part, never its host path.
    """
    path = os.path.abspath(path)
    shown = os.path.basename(path)
    if not os.path.isfile(path):
        raise SceneError(f"cannot load {shown!r}: no such file")
    beside = shelf.Shelf(os.path.dirname(path))
    try:
        outside = references.references(path, beside.accepts)
    except blendfile.Unreadable as err:
        raise SceneRefused(f"cannot load {shown!r}: {err}") from None
    if outside:
        raise SceneRefused(_refusal(shown, outside))
    problems = beside.problems()
    if problems:
        said = "; ".join(problems[: references.SHOWN])
        raise SceneRefused(f"cannot load {shown!r}: {said}; {libraries.ADVICE}")
    # Cleared before opening: a failed open may have replaced part of the scene already.
    digests.CACHE.clear()
    try:
        # Never run scripts embedded in a file: scenes may come from untrusted sources.
        status = bpy.ops.wm.open_mainfile(filepath=path, load_ui=False, use_scripts=False)
    except RuntimeError as err:
        raise SceneError(f"cannot load {shown!r}: {_hidden(str(err), path)}") from None
    if "FINISHED" not in status:
        raise SceneError(f"cannot load {shown!r}: Blender returned {sorted(status)}")
    outside = _paths_left(frozenset(beside.used))
    if outside:
        reset()  # nothing of the file stays
        raise SceneRefused(_refusal(shown, outside), changed=True)
    scene_hash = digests.CACHE.scene_hash()[0]
    digests.CACHE.loaded()  # a commit of the file as loaded need not hash it twice
    return SceneHash(hash=scene_hash)


def _refusal(shown: str, outside: list[references.Reference]) -> str:
    linked = any(ref.kind == "library" for ref in outside)
    advice = f"{references.ADVICE}; or {libraries.ADVICE}" if linked else references.ADVICE
    return (
        f"cannot load {shown!r}: it refers to data outside it, which blendmesh does not "
        f"read: {references.describe(outside)}; {advice}"
    )


def _hidden(message: str, path: str) -> str:
    """``message`` with ``path`` shown as its last part, and its folder left out."""
    message = message.replace(path, os.path.basename(path))
    folder = os.path.dirname(path).rstrip(os.sep) + os.sep
    return message.replace(folder, "") if folder != os.sep else message


def _paths_left(own: frozenset[str] = frozenset()) -> list[references.Reference]:
    """The paths Blender still lists after opening, packed data aside and the shot's own
    libraries (``own``, as the file stores them) too. A weak reference
    (where an appended datablock came from, which Blender never reads on its own: the
    default material's, for one) is listed too, so each is taken off once."""
    listed = Counter(bpy.utils.blend_paths(absolute=False, packed=False, local=False))
    if not listed:
        return []
    for collection in (getattr(bpy.data, name) for name in dir(bpy.data)):
        if isinstance(collection, bpy.types.bpy_prop_collection):
            for item in collection:
                weak = getattr(item, "library_weak_reference", None)
                if weak is not None:
                    listed[weak.filepath] -= 1
    left = sorted(path for path, times in listed.items() if times > 0 and path not in own)
    return [references.Reference("file", "", references.last_part(p)) for p in left]


def save(path: str, compress: bool = False, checked: bool = True) -> SavedScene:
    """Write a copy of the scene (the session keeps no file association); its hash is
    the full one, checked against the cache, since a commit stores it. Unchecked, it is
    the cache's, and the caller checks it with ``verify`` before relying on it."""
    path = os.path.abspath(path)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        # Paths stay as the file holds them: a shot's links name its libraries beside
        # whatever folder it is opened from (ADR 0060), and Blender's remapping would point
        # them back at the folder it was last opened from.
        status = bpy.ops.wm.save_as_mainfile(
            filepath=path, copy=True, compress=compress, relative_remap=False
        )
    except (OSError, RuntimeError) as err:
        raise SceneError(f"cannot save {path!r}: {err}") from None
    if "FINISHED" not in status or not os.path.isfile(path):
        raise SceneError(f"cannot save {path!r}: Blender returned {sorted(status)}")
    scene_hash = digests.CACHE.checked_hash() if checked else digests.CACHE.scene_hash()[0]
    return SavedScene(path=path, bytes=os.path.getsize(path), hash=scene_hash)


# Each cached digest entry's summary, by the entry's id, with the entry itself (held, so
# its id names it until the next summary drops it): an entry is replaced, never changed,
# when its datablock changes, so an edit summarises only what it changed.
_summaries: dict[int, tuple[Any, ObjectSummary | MaterialSummary]] = {}


def summary(scene_id: str) -> SceneSummary:
    """What planners are told of the scene (``contracts.scenes.summarize``), read from the
    digest cache's values: the snapshot tool would copy every value and send it whole, a
    megabyte for 2,000 objects, for the few fields a summary keeps."""
    global _summaries
    scene_hash, _ = digests.CACHE.scene_hash()
    entries = sorted(digests.CACHE.current().items(), key=lambda item: item[0])
    kept: dict[int, tuple[Any, ObjectSummary | MaterialSummary]] = {}
    objects: list[ObjectSummary] = []
    materials: list[MaterialSummary] = []
    for (kind, _), entry in entries:
        if kind not in ("object", "material"):
            continue
        found = _summaries.get(id(entry))
        if found is None or found[0] is not entry:  # only read: summaries build their own
            made = (
                object_summary(entry.value) if kind == "object" else material_summary(entry.value)
            )
            found = (entry, made)
        kept[id(entry)] = found
        if isinstance(found[1], ObjectSummary):
            objects.append(found[1])
        else:
            materials.append(found[1])
    _summaries = kept
    return SceneSummary(
        scene_id=scene_id,
        scene_hash=scene_hash,
        objects=measures.MEASURES.measured(objects),
        materials=materials,
    )


def verify() -> SceneHash:
    """The full hash, checked against the cache's (``DigestCache.checked_hash``): what an
    unchecked save's hash must equal before a commit stores it."""
    return SceneHash(hash=digests.CACHE.checked_hash())


def scene_fingerprint() -> Fingerprint:
    """Hash plus object count from the digest cache, for cheap drift checks."""
    scene_hash, objects = digests.CACHE.scene_hash()
    return Fingerprint(hash=scene_hash, objects=objects)


def full_snapshot() -> FullSnapshot:
    """The ``scene.snapshot`` tool's data described afresh, leaving the cache as it is."""
    snap = fingerprint.snapshot()
    return FullSnapshot(data={**snap, "hash": digests.snapshot_hash(snap)})


def full_fingerprint(scheme: HashScheme = "digests") -> Fingerprint:
    """Hash plus object count recomputed in full, leaving the cache as it is; with
    ``whole_snapshot``, the hash revisions committed before ADR 0012 carry."""
    objects = len(bpy.context.scene.objects)
    if scheme == "whole_snapshot":
        return Fingerprint(hash=fingerprint.whole_snapshot_hash(), objects=objects)
    return Fingerprint(hash=digests.full_hash(), objects=objects)
