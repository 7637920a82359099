"""The ``plan`` backend: the request carries its plan; nothing is generated.

The plan is a spec 000 operation set or a spec 004 Geometry Nodes response
(``intake.accept`` tells them apart by shape).
"""

from __future__ import annotations

from typing import Any

from contracts.nodes import NodeCatalog
from contracts.tools import ToolCatalog
from services.planner.graph import Reply, ValidPlan
from services.planner.intake import accept
from services.planner.settings import DEFAULT_LIMITS, PlanLimits


def plan_given(
    raw: Any,
    request_id: str,
    catalog: ToolCatalog,
    nodes: NodeCatalog | None = None,
    limits: PlanLimits = DEFAULT_LIMITS,
) -> ValidPlan | Reply:
    """Validate a hand-written plan exactly as a generated one would be."""
    return accept(raw, request_id, catalog, nodes, limits)
