"""What a plan records of the code that made it (issue 42): this planner's blendmesh
release and the Blender whose catalog it was checked against. ``catalog_version``, the
pin an executor honours, is recorded beside them (ADR 0053)."""

from __future__ import annotations

from typing import TypedDict

from contracts.tools import ToolCatalog
from services.runtime.service.version import BLENDMESH_VERSION


class PlannedBy(TypedDict):
    blendmesh_version: str
    blender_version: str


def planned_by(catalog: ToolCatalog) -> PlannedBy:
    """The ``run.planned`` fields naming the release and Blender that planned it."""
    return {"blendmesh_version": BLENDMESH_VERSION, "blender_version": catalog.blender_version}
