"""Scene-level operations: the read-only snapshot tool and the blendmesh/scene.* methods.

The methods (reset/load/save/fingerprint) are not MCP tools: the executor uses
them for checkpoints and persistence, so they report failures as SceneError
(JSON-RPC -32000) rather than as ToolResults.
"""

from __future__ import annotations

import os
from typing import Any

import bpy

from contracts.bridge import Fingerprint, SavedScene, SceneHash

from .. import fingerprint
from ..registry import Outcome, tool


class SceneError(Exception):
    """A scene method failed (missing file, unwritable path, Blender refused)."""


@tool(
    name="scene.snapshot",
    description=(
        "Full canonical description of the scene (every object, modifier and used material; never "
        "truncated) plus its hash. Rotations here are radians, as Blender stores them."
    ),
    input_schema={"type": "object", "additionalProperties": False, "properties": {}},
    safety_level="read_only",
    idempotence_class="idempotent",
    compensation="none",
)
def snapshot(args: dict[str, Any]) -> Outcome:
    """Return the snapshot the hash is computed from, so callers can see what changed."""
    snap = fingerprint.snapshot()
    data = {**snap, "hash": fingerprint.hash_snapshot(snap)}
    return Outcome(data=data, mutated=False, message=f"{len(snap['objects'])} objects")


def reset() -> SceneHash:
    """Replace everything with Blender's empty factory scene."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    return SceneHash(hash=fingerprint.scene_hash())


def load(path: str) -> SceneHash:
    """Open a .blend file as the current scene."""
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise SceneError(f"cannot load {path!r}: no such file")
    try:
        # Never run scripts embedded in a file: scenes may come from untrusted sources.
        status = bpy.ops.wm.open_mainfile(filepath=path, load_ui=False, use_scripts=False)
    except RuntimeError as err:
        raise SceneError(f"cannot load {path!r}: {err}") from None
    if "FINISHED" not in status:
        raise SceneError(f"cannot load {path!r}: Blender returned {sorted(status)}")
    return SceneHash(hash=fingerprint.scene_hash())


def save(path: str, compress: bool = False) -> SavedScene:
    """Write a copy of the scene (the session keeps no file association)."""
    path = os.path.abspath(path)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        status = bpy.ops.wm.save_as_mainfile(filepath=path, copy=True, compress=compress)
    except (OSError, RuntimeError) as err:
        raise SceneError(f"cannot save {path!r}: {err}") from None
    if "FINISHED" not in status or not os.path.isfile(path):
        raise SceneError(f"cannot save {path!r}: Blender returned {sorted(status)}")
    return SavedScene(path=path, bytes=os.path.getsize(path), hash=fingerprint.scene_hash())


def scene_fingerprint() -> Fingerprint:
    """Hash plus object count, for cheap drift checks."""
    snap = fingerprint.snapshot()
    return Fingerprint(hash=fingerprint.hash_snapshot(snap), objects=len(snap["objects"]))
