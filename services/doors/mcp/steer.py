"""``rerun_run`` and ``fork_run``: steering the caller's own runs from an MCP host (issue
42, ADR 0063). Each is a new run through the planner and the policy, followed like ``run``;
a fork's revert of the scene asks the person through the host, as any destructive step."""

from __future__ import annotations

from typing import Any

import mcp.types as types
from mcp.shared.context import RequestContext

from contracts.events import RunRequested
from contracts.origins import MAX_OPERATION_INDEX
from contracts.tool_answers import output_schema
from services.doors.core.steer_client import Steering
from services.doors.core.steering import NoRun, SteerInvalid
from services.doors.mcp.approval import follow_request
from services.doors.mcp.door import Door, check
from services.doors.mcp.errors import NotFound, ValidationError
from services.doors.mcp.tools import RUN_ID, _schema

Context = RequestContext[Any, Any, Any]
_PLAN = {"type": "object", "description": "an edited spec 000 operation set, as JSON"}
_WRITES = types.ToolAnnotations(
    readOnlyHint=False, destructiveHint=True, idempotentHint=False, openWorldHint=False
)

RERUN_RUN = types.Tool(
    name="rerun_run",
    title="Re-run a run from an operation",
    description=(
        "Run one of your failed or completed runs again from operation `from_op` (1 for the "
        "first, in its schedule), with its plan or an edited `plan` whose operations before "
        "`from_op` are unchanged. It keeps the run's request id, so what the run committed "
        "answers skipped_idempotent and the rest runs. Refused when the scene moved on since "
        "(fork_run starts from the run's parent revision instead) or the run was cancelled."
    ),
    inputSchema=_schema(
        {
            "run_id": RUN_ID,
            "from_op": {"type": "integer", "minimum": 1, "maximum": MAX_OPERATION_INDEX},
            "plan": _PLAN,
        },
        ["run_id", "from_op"],
    ),
    outputSchema=output_schema("rerun_run"),
    annotations=_WRITES,
)
FORK_RUN = types.Tool(
    name="fork_run",
    title="Fork a run",
    description=(
        "A new run of one of your runs' plan, or an edited `plan`, on the revision that run "
        "started from (or, with `from_op`, the one that operation met): its first operation, "
        "fork.base, reverts the scene there (a person approves it), then the plan from "
        "`from_op` on runs under a request id of its own."
    ),
    inputSchema=_schema(
        {
            "run_id": RUN_ID,
            "from_op": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_OPERATION_INDEX,
                "default": 1,
            },
            "plan": _PLAN,
        },
        ["run_id"],
    ),
    outputSchema=output_schema("fork_run"),
    annotations=_WRITES,
)
TOOLS = [RERUN_RUN, FORK_RUN]
NAMES = {t.name for t in TOOLS}


async def call(door: Door, user: str, name: str, args: Any, ctx: Context) -> types.CallToolResult:
    steering = Steering(door.bus, door.settings, door.host)
    try:
        request: RunRequested
        if name == "rerun_run":
            checked = check(args, RERUN_RUN.inputSchema)
            request, _ = await steering.rerun(
                checked["run_id"], user, checked["from_op"], checked.get("plan")
            )
        else:
            checked = check(args, FORK_RUN.inputSchema)
            request, _ = await steering.fork(
                checked["run_id"], user, checked.get("plan"), from_op=checked.get("from_op", 1)
            )
    except NoRun as exc:
        raise NotFound(str(exc)) from None
    except (SteerInvalid, ValueError) as exc:
        raise ValidationError(str(exc)) from None
    return await follow_request(door, user, request, ctx)
