"""Where every plan enters the planner: a spec 000 operation set or a spec 004 response.

The two are told apart by shape (``contracts.geonodes.is_geonode_response``: ``steps`` or
``version`` rather than ``operations``). A 004 response is checked against the node
catalog, compiled into ``gn.*`` operations, and then validated by ``graph.validate`` like
any operation set, so what leaves the planner is always spec 000.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import msgspec

from contracts.failures import failure
from contracts.geonodes import is_geonode_response
from contracts.nodes import NodeCatalog
from contracts.tools import ToolCatalog
from services.executor.client import NodeCatalogSource
from services.planner.geonodes.check import check_response
from services.planner.geonodes.compile import compile_response, parse_response
from services.planner.graph import PlanInvalid, Reply, ValidPlan, loaded, validate
from services.planner.settings import DEFAULT_LIMITS, PlanLimits
from services.runtime.service.errors import Retry

GN_PROBE = "gn.add_node"  # a Geometry Nodes tool every bridge that has them registers


async def node_catalog(
    source: NodeCatalogSource | None, catalog: ToolCatalog
) -> NodeCatalog | None:
    """The node catalog a Geometry Nodes plan is checked against.

    None when this mesh has no Geometry Nodes tools (or no source is wired): a plan that
    needs them is refused then. An executor publishes both catalogs as it starts, so one
    missing while the tools are there is waited for (``Retry``).
    """
    if source is None or catalog.get(GN_PROBE) is None:
        return None
    nodes = await source.get()
    if nodes is None:
        raise Retry("no node catalog yet: waiting for an executor to publish one", 0.5)
    return nodes


def needs_nodes(raw: Any) -> bool:
    """Whether checking ``raw`` needs the node catalog (it is a 004 response)."""
    return is_geonode_response(_quiet_loaded(raw))


def accept(
    raw: Any,
    request_id: str,
    catalog: ToolCatalog,
    nodes: NodeCatalog | None,
    limits: PlanLimits = DEFAULT_LIMITS,
) -> ValidPlan | Reply:
    """The valid plan ``raw`` stands for, or ``PlanInvalid`` with the failure contract.

    ``request_id`` is the run's: a 004 response has none of its own. A 004 response with
    no steps (and ``done``) runs nothing: it is a ``Reply`` of its ``final_message``.
    """
    raw = loaded(raw)
    if not is_geonode_response(raw):
        return validate(raw, catalog, limits.max_operations)
    response = parse_response(raw, limits.max_operations, limits.max_python_chars)
    if not response.steps:
        return Reply(response.final_message or "Nothing in the scene needed to change.")
    if nodes is None:
        raise PlanInvalid(
            failure(
                "TOOL_UNKNOWN",
                "This mesh's Blender publishes no node catalog, so a Geometry Nodes response "
                "cannot be checked: answer with an operation set (spec 000)",
            ),
            "a Geometry Nodes response (spec 004) needs the node catalog, and this mesh has none",
        )
    check_response(response, nodes)
    compiled = compile_response(response, request_id, catalog)
    plan = validate(msgspec.to_builtins(compiled), catalog, limits.max_operations)
    return dataclasses.replace(
        plan,
        done=response.done,
        requires_gate_verification=response.meta.requires_gate_verification,
    )


def _quiet_loaded(raw: Any) -> Any:
    try:
        return loaded(raw)
    except PlanInvalid:
        return None
