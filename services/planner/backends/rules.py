"""The rules planner as a backend: a prompt read into operations, validated like a model's.

Each thread's last run is remembered as the rules planner read it, so `it`, `the copy`
and `again` in the thread's next request mean what they meant to the person.
"""

from __future__ import annotations

import msgspec

from contracts.events import RunRequested
from contracts.failures import failure
from contracts.nodes import NodeCatalog
from contracts.scenes import SceneSummary
from contracts.tools import ToolCatalog
from services.planner.graph import PlanInvalid, ValidPlan, validate
from services.planner.outcomes import refused
from services.planner.recent import Recent
from services.planner.rules.parse import EarlierRun, UnreadableRequest, plan_request


def plan_rules(
    event: RunRequested,
    catalog: ToolCatalog,
    nodes: NodeCatalog | None,
    scene: SceneSummary | None,
    threads: Recent[str, EarlierRun],
    max_operations: int,
) -> ValidPlan:
    """The request's plan, as the rules planner reads its prompt; raises PlanInvalid."""
    if not event.prompt:
        raise PlanInvalid(
            failure("REQUEST_UNREADABLE", "Send a prompt or a plan", recoverable=False),
            "the request has neither a prompt nor a plan",
        )
    earlier = threads.get(event.thread_id)
    try:
        ops = plan_request(
            event.prompt, event.request_id, catalog, nodes, scene, earlier, event.focus
        )
    except UnreadableRequest as exc:
        raise PlanInvalid(refused(exc), exc.message) from None
    # The rules planner is trusted no more than a model: its output is validated too.
    valid = validate(msgspec.to_builtins(ops), catalog, max_operations)
    plans = tuple((op.tool_name, dict(op.args)) for op in ops.operations)
    after = earlier.then(event.prompt, plans) if earlier else EarlierRun(event.prompt, plans)
    threads.put(event.thread_id, after)
    return valid
