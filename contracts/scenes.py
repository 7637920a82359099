"""A compact summary of a saved scene, for planners that cannot open Blender themselves.

The executor writes one per scene after every commit; a model gets it in its prompt so
its plan refers to objects that exist.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec


class ObjectSummary(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One object of a scene, with what a plan may refer to: name, transform, modifiers."""

    name: str
    type: str
    location: list[float]
    rotation_degrees: list[float]
    scale: list[float]
    modifiers: list[str]  # "Name:TYPE"
    materials: list[str]
    # Where it is and how big in the world (parents, rotation and modifiers counted), as the
    # bridge measures it; None in summaries written before these were kept, where the
    # snapshot alone was summarised (it has no bounds), and for an object Blender does not
    # evaluate (disabled in viewports, or in a collection the view layer excludes).
    # ``dimensions`` is Blender's own (the N panel's): the object's bounds times its scale,
    # in scene units.
    dimensions: list[float] | None = None
    world_location: list[float] | None = None
    world_bounds: list[list[float]] | None = None  # [min x,y,z], [max x,y,z]


class MaterialSummary(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One material of a scene, so a plan can reuse it rather than make a twin."""

    name: str
    base_color: list[float]
    metallic: float
    roughness: float


class SceneSummary(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What a model planner is told about a scene, instead of opening the ``.blend``."""

    scene_id: str
    scene_hash: str
    objects: list[ObjectSummary]
    materials: list[MaterialSummary]


def summarize(scene_id: str, snapshot: dict[str, Any]) -> SceneSummary:
    """Reduce the bridge's ``scene.snapshot`` data to what a planner needs."""
    return SceneSummary(
        scene_id=scene_id,
        scene_hash=snapshot.get("hash", ""),
        objects=[object_summary(o) for o in snapshot.get("objects", [])],
        materials=[material_summary(m) for m in snapshot.get("materials", [])],
    )


def object_summary(value: dict[str, Any]) -> ObjectSummary:
    """What a planner is told of one object of a snapshot."""
    return ObjectSummary(
        name=value["name"],
        type=value.get("type", "MESH"),
        location=_rounded(value.get("location", [0, 0, 0])),
        rotation_degrees=_rounded([math.degrees(v) for v in value.get("rotation", [0, 0, 0])]),
        scale=_rounded(value.get("scale", [1, 1, 1])),
        modifiers=[f"{m['name']}:{m['type']}" for m in value.get("modifiers", [])],
        materials=[m for m in value.get("material_slots", []) if m],
    )


def material_summary(value: dict[str, Any]) -> MaterialSummary:
    """What a planner is told of one material of a snapshot."""
    return MaterialSummary(
        name=value["name"],
        base_color=_rounded(value.get("base_color", [0.8, 0.8, 0.8, 1.0])),
        metallic=round(value.get("metallic", 0.0), 4),
        roughness=round(value.get("roughness", 0.5), 4),
    )


def _rounded(values: list[float]) -> list[float]:
    return [round(v, 4) for v in values]


class Head(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The current revision of a scene, as stored in the ``scene_heads`` KV bucket."""

    scene_id: str
    revision: int
    scene_hash: str
    object_name: str
    epoch: int  # lease epoch of the executor that committed it
    kv_revision: int = 0  # filled in on read: what a commit must compare against
    # The user whose run created the scene: only they may change it, download it or see
    # its preview. "" for a scene committed before scenes had owners.
    owner: str = ""
