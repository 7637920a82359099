"""The answer to "describe the scene": a ``scene.snapshot`` result as lines a person reads.

The same lines ``contracts.scene_report`` prints for a stored revision (``blendmesh scenes
show``), built from the snapshot the run took instead of an inspection artifact, so both
describe a scene alike: objects with type, transform, parent, modifiers, materials and
camera/light details, then the materials, lights and cameras.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from contracts.receipts import Receipt
from contracts.scene_report import MAX_REPORTED_OBJECTS, report_lines, srgb_hex
from contracts.world import world_locations


def _object(entry: dict[str, Any], worlds: dict[str, list[float]]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": entry["name"],
        "type": entry.get("type", "MESH"),
        "location": [round(v, 4) for v in entry.get("location", [0, 0, 0])],
        "rotation_degrees": [round(math.degrees(v), 4) for v in entry.get("rotation", [0, 0, 0])],
        "scale": [round(v, 4) for v in entry.get("scale", [1, 1, 1])],
        "modifiers": [f"{m['name']}:{m['type']}" for m in entry.get("modifiers", [])],
        "materials": [m for m in entry.get("material_slots", []) if m],
    }
    if entry.get("parent"):
        out["parent"] = entry["parent"]
        out["world_location"] = worlds[entry["name"]]  # "where is the cap?": in the world
    if entry.get("hidden"):
        out["hidden"] = list(entry["hidden"])
    if isinstance(entry.get("camera"), dict):
        out["camera"] = entry["camera"]
    if isinstance(entry.get("light"), dict):
        out["light"] = _light(entry["light"])
    return out


def _light(light: dict[str, Any]) -> dict[str, Any]:
    """The snapshot's light (Blender's energy; a sun's angle in radians) in the inspection's
    words and units (power; degrees), so both descriptions say the same."""
    sun = light.get("type") == "SUN"
    size = light.get("size", 0.0)
    return {
        "kind": light.get("type"),
        "power": light.get("energy", 0.0),
        "color": light.get("color", []),
        "size": round(math.degrees(size), 4) if sun else size,
    }


def snapshot_lines(scene_id: str, snapshot: dict[str, Any]) -> list[str]:
    """The description of a ``scene.snapshot`` result of scene ``scene_id``."""
    objects = sorted(snapshot.get("objects", []), key=lambda o: o["name"])
    types: dict[str, int] = {}
    for entry in objects:
        kind = entry.get("type", "MESH")
        types[kind] = types.get(kind, 0) + 1
    shown = objects[:MAX_REPORTED_OBJECTS]
    worlds = world_locations(objects)
    report: dict[str, Any] = {
        "types": dict(sorted(types.items())),
        "objects": [_object(o, worlds) for o in shown],
        "more_objects": len(objects) - len(shown),
        "materials": [m["name"] for m in snapshot.get("materials", [])],
        "material_colors": {
            m["name"]: srgb_hex(m["base_color"])
            for m in snapshot.get("materials", [])
            if m.get("base_color")
        },
        "lights": [o["name"] for o in objects if o.get("type") == "LIGHT"],
        "cameras": [o["name"] for o in objects if o.get("type") == "CAMERA"],
        "last_run": None,
    }
    kinds = ", ".join(f"{n} {t.lower()}" for t, n in sorted(types.items())) or "nothing"
    # The first line of report_lines names a stored revision; a snapshot has none.
    return [f"scene {scene_id}: {len(objects)} objects: {kinds}", *report_lines_body(report)]


def report_lines_body(report: dict[str, Any]) -> list[str]:
    """``report_lines`` without its revision header."""
    return report_lines(
        {"scene_id": "", "revision": 0, "scene_hash": "", "object_count": 0, **report}
    )[1:]


def described(scene_id: str, receipts: Sequence[Receipt]) -> str | None:
    """The description of the last ``scene.snapshot`` a run took, if it took one."""
    for receipt in reversed(receipts):
        snapshot = receipt.result
        if receipt.tool_name == "scene.snapshot" and isinstance(snapshot, dict):
            return "\n".join(snapshot_lines(scene_id, snapshot))
    return None
