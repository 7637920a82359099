"""The ``plan`` backend: the request carries its operation set; nothing is generated."""

from __future__ import annotations

from typing import Any

from contracts.limits import DEFAULT_MAX_OPERATIONS
from contracts.tools import ToolCatalog
from services.planner.graph import ValidPlan, validate


def plan_given(
    raw: Any, catalog: ToolCatalog, max_operations: int = DEFAULT_MAX_OPERATIONS
) -> ValidPlan:
    """Validate a hand-written plan exactly as a generated one would be."""
    return validate(raw, catalog, max_operations)
