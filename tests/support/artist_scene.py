"""The scenes of tests/fixtures/artist_requests.py: as a planner's summary, as objects made
in a real bridge, and read back from a real snapshot as the fields a request checks."""

from __future__ import annotations

import math
from typing import Any

from contracts.operations import SafetyLevel
from contracts.scenes import ObjectSummary, SceneSummary
from contracts.tools import ToolCatalog, ToolSpec
from tests.fixtures.artist_requests import Request, Thing

TOOLS: dict[str, SafetyLevel] = {
    "scene.snapshot": "read_only",
    "object.create": "safe_write",
    "object.transform": "safe_write",
    "object.rename": "safe_write",
    "object.delete": "destructive",
    "modifier.add": "safe_write",
    "modifier.set": "safe_write",
    "modifier.remove": "safe_write",
    "modifier.apply": "destructive",
    "material.assign": "safe_write",
    "camera.create": "safe_write",
    "camera.set": "safe_write",
    "camera.set_active": "safe_write",
    "light.create": "safe_write",
    "light.set": "safe_write",
    "world.set": "safe_write",
    "object.duplicate": "safe_write",
    "object.parent": "safe_write",
    "object.unparent": "safe_write",
    "object.shade": "safe_write",
    "collection.create": "safe_write",
    "collection.move": "safe_write",
    "object.visibility": "safe_write",
    "keyframe.insert": "safe_write",
    # modelling, UV and shading
    **dict.fromkeys(
        (
            "mesh.extrude",
            "mesh.inset",
            "mesh.bevel",
            "mesh.boolean",
            "mesh.merge_by_distance",
            "mesh.recalculate_normals",
            "mesh.shade_auto_smooth",
            "mesh.separate",
            "mesh.apply_transform",
            "uv.smart_project",
            "shader.create",
            "shader.add_node",
            "shader.link",
            "shader.set_input",
            "shader.set_property",
            "shader.set_ramp",
            "material.assign_faces",
        ),
        "safe_write",
    ),
    "mesh.join": "destructive",
}
DEFAULT_MODIFIER_NAMES = {"BEVEL": "Bevel", "SUBSURF": "Subdivision", "NODES": "GeometryNodes"}
TOLERANCE = 1e-3


def catalog(*without: str) -> ToolCatalog:
    """A catalog with the bridge's tools (the artist tools included), minus ``without``."""
    tools = [
        ToolSpec(name=n, description=n, input_schema={"type": "object"}, safety_level=level)
        for n, level in TOOLS.items()
        if n not in without
    ]
    return ToolCatalog(version="artist", blender_version="5.0.1", tools=tools)


def _type(kind: str) -> str:
    return "CAMERA" if kind == "camera" else "LIGHT" if kind.startswith("light") else "MESH"


def summary(scene: tuple[Thing, ...]) -> SceneSummary:
    """What the planner is told of a starting scene."""
    objects = [
        ObjectSummary(
            name=name,
            type=_type(kind),
            location=[float(v) for v in at],
            rotation_degrees=[0.0, 0.0, 0.0],
            scale=[1.0, 1.0, 1.0],
            modifiers=[f"{DEFAULT_MODIFIER_NAMES[m]}:{m}" for m in mods],
            materials=[],
        )
        for name, kind, at, mods in sorted(scene)
    ]
    return SceneSummary(scene_id="artist", scene_hash="", objects=objects, materials=[])


def build_calls(scene: tuple[Thing, ...]) -> list[tuple[str, dict[str, Any]]]:
    """The bridge calls that make a starting scene."""
    calls: list[tuple[str, dict[str, Any]]] = []
    for name, kind, at, mods in scene:
        location = [float(v) for v in at]
        if kind == "camera":
            calls.append(("camera.create", {"name": name, "location": location}))
        elif kind.startswith("light:"):
            calls.append(("light.create", {"kind": kind[6:], "name": name, "location": location}))
        else:
            calls.append(("object.create", {"primitive": kind, "name": name, "location": location}))
        calls += [("modifier.add", {"object": name, "type": m}) for m in mods]
    return calls


def view(snapshot: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A real ``scene.snapshot`` as the fields requests check, per object and ``@scene``."""
    materials = {m["name"]: m for m in snapshot.get("materials", [])}
    found: dict[str, dict[str, Any]] = {}
    for o in snapshot["objects"]:
        entry: dict[str, Any] = {
            "type": o["type"],
            "location": o["location"],
            "rotation_degrees": [math.degrees(v) for v in o["rotation"]],
            "scale": o["scale"],
            "parent": o.get("parent"),
            "modifiers": [m["type"] for m in o.get("modifiers", [])],
            "collections": o.get("collections", []),
            "hidden": o.get("hidden", []),
            "smooth": bool(o.get("smooth_faces")),
            "keyframes": sorted({k[0] for k in o.get("keyframes", [])}),
        }
        slots = [s for s in o.get("material_slots", []) if s]
        if slots:
            material = materials[slots[0]]
            entry["base_color"] = material["base_color"][:3]
            entry["metallic"] = material["metallic"]
            entry["roughness"] = material["roughness"]
        if "camera" in o:
            entry["lens"] = o["camera"]["lens"]
        if "light" in o:
            entry["light_type"] = o["light"]["type"]
            entry["energy"] = o["light"]["energy"]
            entry["light_color"] = o["light"]["color"]
        found[o["name"]] = entry
    world = snapshot.get("world") or {}
    found["@scene"] = {
        "active_camera": snapshot.get("active_camera"),
        "world_color": world.get("color"),
        "world_strength": world.get("strength"),
    }
    return found


def _same(want: Any, got: Any) -> bool:
    if isinstance(want, list) and isinstance(got, list):
        return len(want) == len(got) and all(_same(w, g) for w, g in zip(want, got, strict=True))
    if isinstance(want, bool) or isinstance(got, bool):
        return want is got
    if isinstance(want, int | float) and isinstance(got, int | float):
        return abs(want - got) <= TOLERANCE
    return bool(want == got)


def mismatches(request: Request, scene: dict[str, dict[str, Any]]) -> list[str]:
    """What of ``request.state`` the scene does not hold, one line each."""
    wrong: list[str] = []
    for name, fields in request.state.items():
        got = scene.get(name)
        if fields.get("absent"):
            if got is not None:
                wrong.append(f"{name} should be gone")
            continue
        if got is None:
            wrong.append(f"{name} is missing")
            continue
        for key, want in fields.items():
            if not _same(want, got.get(key)):
                wrong.append(f"{name}.{key} is {got.get(key)!r}, not {want!r}")
    return wrong
