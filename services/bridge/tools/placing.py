"""What the tools that add or aim objects share: bounded placement vectors, and (from the
shared bodies) the check of an object's kind and linking a new object into the scene."""

from __future__ import annotations

from typing import Any

from blendmesh_addon.tools.placing import (
    LOCATION_LIMIT,
    ROTATION_LIMIT,
    link_new,
    require_kind,
    world_location,
)

from ..registry import vec3
from .objects import ROTATION_DOC

__all__ = [
    "LOCATION_LIMIT", "ROTATION_LIMIT", "link_new", "location_schema", "require_kind",
    "rotation_schema", "world_location",
]  # fmt: skip


def location_schema(description: str) -> dict[str, Any]:
    """A location in scene units, each component within +-LOCATION_LIMIT."""
    return vec3(description, LOCATION_LIMIT)


def rotation_schema(description: str) -> dict[str, Any]:
    """An Euler XYZ rotation in degrees, each component within +-ROTATION_LIMIT."""
    return vec3(f"{ROTATION_DOC} {description}", ROTATION_LIMIT)
