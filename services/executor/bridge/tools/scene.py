"""Scene-level operations: the read-only snapshot tool and the blendmesh/scene.* methods.

The methods (reset/load/save/fingerprint) are not MCP tools: the executor uses
them for checkpoints and persistence, so they report failures as SceneError
(JSON-RPC -32000) rather than as ToolResults.

``fingerprint`` and the snapshot tool answer from the digest cache; whatever replaces
the scene (reset, load) clears it, and ``save`` (a checkpoint or a commit) hashes the
scene in full and checks the cache against it (ADR 0012).
"""

from __future__ import annotations

import os
from typing import Any

import bpy

from contracts.bridge import Fingerprint, FullSnapshot, HashScheme, SavedScene, SceneHash

from .. import digests, fingerprint
from ..registry import Outcome, tool


class SceneError(Exception):
    """A scene method failed (missing file, unwritable path, Blender refused)."""


@tool(
    name="scene.snapshot",
    description=(
        "Full canonical description of the scene (every object, modifier and used material, "
        "cameras, lights, the world, collections and keyframes; never truncated) plus its "
        "hash. Rotations here are radians, as Blender stores them."
    ),
    input_schema={"type": "object", "additionalProperties": False, "properties": {}},
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
    return SceneHash(hash=digests.CACHE.scene_hash()[0])


def load(path: str) -> SceneHash:
    """Open a .blend file as the current scene."""
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise SceneError(f"cannot load {path!r}: no such file")
    # Cleared before opening: a failed open may have replaced part of the scene already.
    digests.CACHE.clear()
    try:
        # Never run scripts embedded in a file: scenes may come from untrusted sources.
        status = bpy.ops.wm.open_mainfile(filepath=path, load_ui=False, use_scripts=False)
    except RuntimeError as err:
        raise SceneError(f"cannot load {path!r}: {err}") from None
    if "FINISHED" not in status:
        raise SceneError(f"cannot load {path!r}: Blender returned {sorted(status)}")
    return SceneHash(hash=digests.CACHE.scene_hash()[0])


def save(path: str, compress: bool = False) -> SavedScene:
    """Write a copy of the scene (the session keeps no file association); its hash is
    the full one, checked against the cache, since a commit stores it."""
    path = os.path.abspath(path)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        status = bpy.ops.wm.save_as_mainfile(filepath=path, copy=True, compress=compress)
    except (OSError, RuntimeError) as err:
        raise SceneError(f"cannot save {path!r}: {err}") from None
    if "FINISHED" not in status or not os.path.isfile(path):
        raise SceneError(f"cannot save {path!r}: Blender returned {sorted(status)}")
    return SavedScene(path=path, bytes=os.path.getsize(path), hash=digests.CACHE.checked_hash())


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
