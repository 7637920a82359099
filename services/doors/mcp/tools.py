"""What a host's model sees: the tools with their input schemas, and the resources.

Schemas are published for the model to follow and checked by ``arguments.check``; no
tool approves anything: approval is a person's, asked through the host (elicitation) or
given with ``blendmesh approve``.
"""

from __future__ import annotations

from typing import Any

import mcp.types as types

from contracts.queries import MAX_RUN_ROWS
from contracts.tool_answers import output_schema
from services.doors.core.requests import new_id

ID_PATTERN = r"^[A-Za-z0-9_-]{1,128}$"
SCENE_ID: dict[str, Any] = {
    "type": "string",
    "pattern": ID_PATTERN,
    "description": "the scene to work on, e.g. `default`; a new id starts a new scene",
}
RUN_ID: dict[str, Any] = {
    "type": "string",
    "pattern": ID_PATTERN,
    "description": "a run id as `run` or `runs` answered it, e.g. `run-1a2b...`",
}


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


RUN = types.Tool(
    name="run",
    title="Change a Blender scene",
    description=(
        "Apply a change to a Blender scene through blendmesh: give exactly one of `request` "
        "(plain words, planned by blendmesh's configured planner) or `plan` (a spec 000 "
        "operation set {request_id?, operations: [{operation_id, tool_name, args, "
        "depends_on, safety_level}]}, where blendmesh makes the request_id when you give "
        "none and the same request_id again means the same plan, applied once; or a spec "
        "004 Geometry Nodes response; `list_category` and `search_tools` find the tools "
        "and their arguments, the resource blendmesh://catalog has them all). blendmesh checks the "
        "plan, applies policy and runs it; destructive operations wait for a person's "
        "approval, which the host asks for. Answers the run's status, receipts, gates, "
        "failure contract (error_code, recoverable, retry_hint, minimal_repair_plan) and "
        "the scene, with a preview image."
    ),
    inputSchema=_schema(
        {
            "request": {
                "type": "string",
                "minLength": 1,
                "description": 'what to do, e.g. "add a cube named Box at 0 0 1"',
            },
            "plan": {
                "type": "object",
                "description": "a spec 000 operation set or a spec 004 response, as JSON",
            },
            "scene_id": SCENE_ID,
            "thread_id": {
                "type": "string",
                "pattern": ID_PATTERN,
                "description": "a thread id from an earlier run, to continue its conversation",
            },
            "rollback": {
                "type": "string",
                "enum": ["operation", "run"],
                "default": "operation",
                "description": "what a failure undoes: the failed operation or the whole run",
            },
            "determinism": {
                "type": "string",
                "enum": ["any", "required"],
                "default": "any",
                "description": "required: refuse the run if any tool of its plan cannot give "
                "a reproducible result (spec 001 nondeterministic_refused)",
            },
        },
        ["scene_id"],
    ),
    outputSchema=output_schema("run"),
    annotations=types.ToolAnnotations(
        readOnlyHint=False, destructiveHint=True, idempotentHint=False, openWorldHint=False
    ),
)


def with_request_id(args: dict[str, Any]) -> dict[str, Any]:
    """``args`` with a request_id in an operation-set plan that has none: the schema shows
    it optional, and spec 000 needs one, so blendmesh makes it (a fresh one: idempotency
    across retries needs the caller's own)."""
    plan = args.get("plan")
    if isinstance(plan, dict) and "operations" in plan and "request_id" not in plan:
        return {**args, "plan": {"request_id": new_id("req"), **plan}}
    return args


_READ = types.ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)

RUNS = types.Tool(
    name="runs",
    title="Recent runs",
    description="Your most recent blendmesh runs, newest first: id, state, scene, error code.",
    inputSchema=_schema(
        {"limit": {"type": "integer", "minimum": 1, "maximum": 200, "default": 20}}, []
    ),
    outputSchema=output_schema("runs"),
    annotations=_READ,
)
RUN_STATUS = types.Tool(
    name="run_status",
    title="A run's status",
    description=(
        "Where one of your runs is now (queued, planning, awaiting_confirmation, executing, "
        "completed, failed), folded from its events, with receipts and failure contract."
    ),
    inputSchema=_schema({"run_id": RUN_ID}, ["run_id"]),
    outputSchema=output_schema("run_status"),
    annotations=_READ,
)
CANCEL_RUN = types.Tool(
    name="cancel_run",
    title="Cancel a run",
    description=(
        "Stop one of your runs that has not ended, e.g. one waiting for approval. A run being "
        "planned or waiting fails at once; an executing one stops after the operation in "
        "hand and is rolled back whole, so the scene stays at the revision it started from. "
        "Answers the run as it ended (failed RUN_CANCELLED), or why there is nothing to cancel."
    ),
    inputSchema=_schema(
        {"run_id": RUN_ID, "reason": {"type": "string", "maxLength": 500, "default": ""}},
        ["run_id"],
    ),
    outputSchema=output_schema("cancel_run"),
    annotations=types.ToolAnnotations(
        readOnlyHint=False, destructiveHint=False, idempotentHint=True, openWorldHint=False
    ),
)
AUDIT = types.Tool(
    name="audit",
    title="A run's audit trail",
    description=(
        "One of your runs' actions, spec 000 audit records and timeline. A long run's comes "
        "in pages: when the answer has a `next_offset`, call again with `offset` set to it."
    ),
    inputSchema=_schema(
        {
            "run_id": RUN_ID,
            "offset": {
                "type": "integer",
                "minimum": 0,
                "maximum": MAX_RUN_ROWS,
                "default": 0,
                "description": "the first row of the page: a `next_offset` the last page gave",
            },
        },
        ["run_id"],
    ),
    outputSchema=output_schema("audit"),
    annotations=_READ,
)
SCENE = types.Tool(
    name="scene",
    title="A scene's head revision",
    description="One of your scenes: its head revision, hash, objects and materials.",
    inputSchema=_schema({"scene_id": SCENE_ID}, ["scene_id"]),
    outputSchema=output_schema("scene"),
    annotations=_READ,
)
PREVIEW = types.Tool(
    name="preview",
    title="A scene's preview",
    description="The 960x720 render taken after your scene's last commit, as a PNG image.",
    inputSchema=_schema({"scene_id": SCENE_ID}, ["scene_id"]),
    outputSchema=output_schema("preview"),
    annotations=_READ,
)

SCENES = types.Tool(
    name="scenes",
    title="Your scenes",
    description="The scenes you own (a scene is yours when your run made its first revision), "
    "each with its head revision and hash.",
    inputSchema=_schema(
        {"limit": {"type": "integer", "minimum": 1, "maximum": 200, "default": 50}}, []
    ),
    outputSchema=output_schema("scenes"),
    annotations=_READ,
)
SCENE_HISTORY = types.Tool(
    name="scene_history",
    title="A scene's revisions",
    description="Every committed revision of one of your scenes, oldest first.",
    inputSchema=_schema({"scene_id": SCENE_ID}, ["scene_id"]),
    outputSchema=output_schema("scene_history"),
    annotations=_READ,
)

REVISION: dict[str, Any] = {"type": "integer", "minimum": 1, "maximum": 2**31 - 1}
SCENE_CHANGES = types.Tool(
    name="scene_changes",
    title="What a revision changed",
    description="The change list of one revision of your scene against another (by default "
    "the head against the revision before it): objects, mesh and curve data, materials, "
    "modifiers and node groups added, removed or changed, each changed property before and "
    "after, and the reviews recorded on the revision. At most 500 changes are listed; "
    "`more_changes` counts the rest.",
    inputSchema=_schema(
        {
            "scene_id": SCENE_ID,
            "revision": {**REVISION, "description": "the revision to show; default: the head"},
            "base": {**REVISION, "description": "compare with; default: the one before"},
        },
        ["scene_id"],
    ),
    outputSchema=output_schema("scene_changes"),
    annotations=_READ,
)

TOOLS = [
    *(RUN, RUNS, RUN_STATUS, CANCEL_RUN, AUDIT),
    *(SCENE, SCENES, SCENE_HISTORY, SCENE_CHANGES, PREVIEW),
]

CATALOG_URI = "blendmesh://catalog"
NODES_URI = "blendmesh://nodes"
SCENE_URI_PREFIX = "blendmesh://scenes/"

RESOURCES = [
    types.Resource(
        uri=CATALOG_URI,  # type: ignore[arg-type]
        name="catalog",
        title="Tool catalog",
        description="Every tool a plan may name, with its argument schema and safety level.",
        mimeType="application/json",
    ),
    types.Resource(
        uri=NODES_URI,  # type: ignore[arg-type]
        name="nodes",
        title="Node catalog",
        description="Every Geometry Nodes node type the executor's Blender accepts.",
        mimeType="application/json",
    ),
]
TEMPLATES = [
    types.ResourceTemplate(
        uriTemplate=SCENE_URI_PREFIX + "{scene_id}",
        name="scene",
        title="A scene's inspection artifact",
        description="What the guardians read of your scene's head revision (JSON).",
        mimeType="application/json",
    )
]
