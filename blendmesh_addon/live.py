"""A committed run, replayed in the artist's open session (ADR 0046, 0047).

The mesh's executor made the revision, with its policy, approvals, checkpoints and
guardians; here the run's operations run again through the same tool bodies
(``tools/``), as one undo step named after the request, so the artist sees the change
without a reload and Ctrl-Z takes it back. Only typed tools are replayed, never code: a
run with a Python step, an import or a revert comes as a revision to pull. After the
replay the session is compared with the revision the mesh holds, object by object.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import bpy

from .session import LOOKS, REPLAYED, undo_label
from .tools import Done, ToolFailure, cameras, keyframes, lights, materials, objects, relations

BODIES: dict[str, Callable[[dict[str, Any]], Done]] = {
    "object.create": objects.create,
    "object.transform": objects.transform,
    "object.rename": objects.rename,
    "object.delete": objects.delete,
    "object.duplicate": relations.duplicate,
    "object.parent": relations.parent,
    "object.unparent": relations.unparent,
    "material.assign": materials.assign,
    "light.create": lights.create,
    "light.set": lights.set_light,
    "camera.create": cameras.create,
    "camera.set": cameras.set_camera,
    "camera.set_active": cameras.set_active,
    "keyframe.insert": keyframes.insert,
}
TOLERANCE = 1e-3  # metres and factors: the mesh's summary rounds to 4 places
ROTATION_TOLERANCE = 0.01  # degrees
MAX_DIFFERENCES = 5  # named in the panel; the rest are counted
assert set(BODIES) == REPLAYED, "session.REPLAYED names the tools replayed here"


def replay(ran: dict[str, Any]) -> None:
    """Apply the run's operations as one undo step; a failure restores the session to
    what it was before the first one and raises ``ToolFailure``."""
    name = undo_label(ran)
    _undo_push(name + " (before)")
    try:
        for op in ran.get("operations") or []:
            if op.get("tool") not in LOOKS:
                BODIES[str(op["tool"])](dict(op.get("args") or {}))
    except Exception as exc:  # whatever failed, the session goes back
        _undo_push(name + " (failed)")
        _undo()  # back to "(before)": no half of a run stays in the session
        if isinstance(exc, ToolFailure):
            raise
        raise ToolFailure("internal_error", f"{type(exc).__name__}: {exc}") from None
    _undo_push(name)


def differences(summary: dict[str, Any]) -> list[str]:
    """How the session differs from the mesh's summary of a revision (``GET
    /api/scenes/{id}``), in words; [] when every object it lists is here, alike."""
    found: list[str] = []
    listed = summary.get("objects") or []
    # By name once: a collection's ``get`` walks it, once per listed object.
    here = {ob.name: ob for ob in bpy.context.scene.objects}
    for want in listed:
        ob = here.get(want["name"])
        if ob is None:
            found.append(f"{want['name']} is missing")
            continue
        found += [f"{ob.name}: {d}" for d in _object_differences(ob, want)]
    if not summary.get("moreObjects"):
        names = {w["name"] for w in listed}
        found += [f"{name} is not on the mesh" for name in here if name not in names]
    if len(found) > MAX_DIFFERENCES:
        found = [*found[:MAX_DIFFERENCES], f"and {len(found) - MAX_DIFFERENCES} more"]
    return found


def _object_differences(ob: Any, want: dict[str, Any]) -> list[str]:
    found = []
    if ob.type != want.get("type"):
        found.append(f"a {ob.type}, not a {want.get('type')}")
    rotation = [math.degrees(v) for v in ob.rotation_euler]
    for what, have, key in (
        ("location", ob.location, "location"),
        ("rotation", rotation, "rotationDegrees"),
        ("scale", ob.scale, "scale"),
    ):
        wanted = want.get(key) or []
        tolerance = ROTATION_TOLERANCE if key == "rotationDegrees" else TOLERANCE
        if len(wanted) != 3 or any(
            abs(a - b) > tolerance for a, b in zip(have, wanted, strict=True)
        ):
            found.append(f"{what} {_vec(have)}, the mesh has {_vec(wanted)}")
    mats = [s.material.name for s in ob.material_slots if s.material]
    if mats != list(want.get("materials") or []):
        found.append(f"materials {mats}, the mesh has {want.get('materials')}")
    parent = ob.parent.name if ob.parent else None
    if parent != want.get("parent"):
        found.append(f"parent {parent}, the mesh has {want.get('parent')}")
    return found


def _vec(values: Any) -> str:
    return "(" + ", ".join(f"{float(v):.3g}" for v in values) + ")"


def _undo_push(message: str) -> None:
    bpy.ops.ed.undo_push(message=message)


def _undo() -> None:
    """Ctrl-Z, from the add-on's timer: in a window when there is one (Blender's UI),
    as is in a background Blender."""
    window = next(iter(getattr(bpy.context.window_manager, "windows", [])), None)
    if window is None or not hasattr(bpy.context, "temp_override"):
        bpy.ops.ed.undo()
        return
    with bpy.context.temp_override(window=window, screen=window.screen):
        bpy.ops.ed.undo()
