"""What a person reads of a scene: its objects (type, transform, modifiers, materials), its
lights and cameras, and the history of its revisions with the runs that made them.

Pure functions of the inspection artifact (``contracts/inspection.py``), so the CLI, the
gateway and anything else that describes a scene say the same thing. Camera and light
details are shown when the artifact carries them.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec

from contracts.inspection import InspectedObject, Inspection

MAX_REPORTED_OBJECTS = 500  # a report lists this many objects and counts the rest


class RevisionEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One revision of a scene and the run that committed it (None when its inspection
    artifact is missing)."""

    revision: int
    scene_hash_prefix: str
    stored_at: str  # ISO 8601, as the store recorded it
    run_id: str | None = None
    user: str | None = None
    approved_by: str | None = None
    tools: list[str] = []


def _rounded(values: list[float], digits: int = 4) -> list[float]:
    return [round(v, digits) for v in values]


def _details(obj: InspectedObject, kind: str) -> dict[str, Any] | None:
    found = getattr(obj, kind, None)  # camera and light details, when the artifact has them
    if found is None:
        return None
    return dict(msgspec.to_builtins(found))


def object_report(obj: InspectedObject) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": obj.name,
        "type": obj.type,
        "location": _rounded(obj.location),
        "rotation_degrees": _rounded([math.degrees(v) for v in obj.rotation_euler]),
        "scale": _rounded(obj.scale),
        "modifiers": [f"{m.name}:{m.type}" for m in obj.modifiers],
        "materials": list(obj.materials),
    }
    if obj.parent:
        out["parent"] = obj.parent
    if obj.world_location:
        out["world_location"] = _rounded(obj.world_location)
    if obj.dimensions and obj.type == "MESH":
        out["dimensions"] = _rounded(obj.dimensions)
    hidden = [k for k in ("viewport", "render") if getattr(obj, f"hide_{k}")]
    if hidden:
        out["hidden"] = hidden
    for kind in ("camera", "light"):
        details = _details(obj, kind)
        if details is not None:
            out[kind] = details
    return out


def scene_report(inspection: Inspection) -> dict[str, Any]:
    """The artist's summary of one revision, as plain data (JSON as is)."""
    objects = sorted(inspection.objects, key=lambda o: o.name)
    types: dict[str, int] = {}
    for obj in objects:
        types[obj.type] = types.get(obj.type, 0) + 1
    shown = objects[:MAX_REPORTED_OBJECTS]
    return {
        "scene_id": inspection.scene_id,
        "revision": inspection.revision,
        "scene_hash": inspection.scene_hash,
        "object_count": len(objects),
        "types": dict(sorted(types.items())),
        "objects": [object_report(o) for o in shown],
        "more_objects": len(objects) - len(shown),
        "materials": [m.name for m in inspection.materials],
        "material_colors": {
            m.name: srgb_hex(m.base_color) for m in inspection.materials if m.base_color
        },
        "lights": [o.name for o in objects if o.type == "LIGHT"],
        "cameras": [o.name for o in objects if o.type == "CAMERA"],
        "last_run": inspection.run.run_id if inspection.run else None,
        "last_user": inspection.run.user if inspection.run else None,
    }


def srgb_hex(linear: list[float]) -> str:
    """A linear RGB(A) colour as the sRGB ``#rrggbb`` a colour picker shows."""

    def channel(c: float) -> int:
        c = min(max(c, 0.0), 1.0)
        srgb = c * 12.92 if c <= 0.0031308 else 1.055 * c ** (1 / 2.4) - 0.055
        return round(srgb * 255)

    return "#" + "".join(f"{channel(c):02x}" for c in linear[:3])


def _light_text(light: dict[str, Any]) -> str:
    """A light in the words and units its tools take: power in W (a sun's in W/m2), size
    in m (a sun's angle in degrees), colour as sRGB hex."""
    sun = light.get("kind") == "SUN"
    text = f" light {light.get('kind')} power {light.get('power', 0):g} {'W/m2' if sun else 'W'}"
    if light.get("size"):
        text += f" size {light['size']:g}{' deg' if sun else ' m'}"
    if light.get("color"):
        text += f" color {srgb_hex(light['color'])}"
    return text


def _place(obj: dict[str, Any]) -> str:
    """Where an object is: in the world, and in its parent's space too when that differs
    (what its location field and the move tools' numbers mean)."""
    world = obj.get("world_location")
    if world is None or world == obj["location"]:
        return _vector(obj["location"])
    return f"{_vector(world)} (world; {_vector(obj['location'])} in {obj.get('parent')}'s space)"


def _vector(values: list[float]) -> str:
    return "(" + ", ".join(f"{v:g}" for v in values) + ")"


def report_lines(report: dict[str, Any]) -> list[str]:
    """``scene_report``'s data as the lines a person reads."""
    types = ", ".join(f"{n} {t.lower()}" for t, n in report["types"].items()) or "nothing"
    lines = [
        f"scene {report['scene_id']} at revision {report['revision']} "
        f"({report['scene_hash'][:12]}): {report['object_count']} objects: {types}",
    ]
    for obj in report["objects"]:
        line = f"  {obj['name']} [{obj['type']}] at {_place(obj)}"
        if obj.get("dimensions"):
            line += f" size {_vector(obj['dimensions'])} m"
        line += f" rot {_vector(obj['rotation_degrees'])} scale {_vector(obj['scale'])}"
        if obj.get("parent"):
            line += f" parent {obj['parent']}"
        if obj["modifiers"]:
            line += f" modifiers {', '.join(obj['modifiers'])}"
        if obj["materials"]:
            line += f" materials {', '.join(obj['materials'])}"
        if obj.get("hidden"):
            line += f" hidden ({', '.join(obj['hidden'])})"
        if "camera" in obj:
            pairs = ", ".join(f"{k}={v}" for k, v in sorted(obj["camera"].items()))
            line += f" camera {pairs}"
        if "light" in obj:
            line += _light_text(obj["light"])
        lines.append(line)
    if report["more_objects"]:
        lines.append(f"  ... and {report['more_objects']} more objects")
    colors = report.get("material_colors", {})
    named = [f"{m} {colors[m]}" if m in colors else m for m in report["materials"]]
    lines.append(f"materials: {', '.join(named) or 'none'}")
    lines.append(f"lights: {', '.join(report['lights']) or 'none'}")
    lines.append(f"cameras: {', '.join(report['cameras']) or 'none'}")
    if report["last_run"]:
        lines.append(f"last change: run {report['last_run']} by {report['last_user']}")
    return lines
