"""Spec 003 §1 over MCP: a stdio server with exactly one tool, ``run_guardians``.

Built on the SDK's low-level ``Server`` rather than FastMCP so that the orchestrator, not
a schema validator, answers malformed input: ``guardians`` that is not a list must come
back as ``fail-closed: guardians_empty`` (003 §3.3), not as a protocol error. The input
schema is published for clients to read and deliberately not enforced; the output schema
is 003 §4 and is checked on every answer.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from services.guardians.orchestrator import TOOL, run_guardians

SERVER_NAME = "blendmesh-guardians"

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "repo_path": {"type": "string", "description": "absolute path of the folder to judge"},
        "guardians": {
            "type": "array",
            "items": {"type": "string"},
            "description": "guardian ids, run in this order (duplicates run again)",
        },
    },
    "required": ["repo_path", "guardians"],
}

_ENTRY: dict[str, Any] = {
    "type": "object",
    "properties": {
        "guardian_id": {"type": "string"},
        "invoked": {"type": "boolean"},
        "ok": {"type": "boolean"},
        "fail_closed": {"type": "boolean"},
        "output": {"type": ["object", "null"]},
        "details": {"type": "string"},
    },
    "required": ["guardian_id", "invoked", "ok", "fail_closed", "output", "details"],
    "additionalProperties": False,
}

OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "tool": {"const": TOOL},
        "repo_path": {"type": "string"},
        "ok": {"type": "boolean"},
        "fail_closed": {"type": "boolean"},
        "guardians": {"type": "array", "items": _ENTRY},
    },
    "required": ["tool", "repo_path", "ok", "fail_closed", "guardians"],
    "additionalProperties": False,
}

RUN_GUARDIANS = types.Tool(
    name=TOOL,
    description=(
        "Run blendmesh's guardians, in order, on a folder holding a revision's "
        "inspection.json; aggregate their outputs verbatim (spec 003 V1). Read-only, "
        "deterministic, fail-closed."
    ),
    inputSchema=INPUT_SCHEMA,
    outputSchema=OUTPUT_SCHEMA,
    annotations=types.ToolAnnotations(
        readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
    ),
)


def build_server() -> Server[Any, Any]:
    """The MCP server: ``tools/list`` answers exactly ``run_guardians``."""
    server: Server[Any, Any] = Server(SERVER_NAME)

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        return [RUN_GUARDIANS]

    @server.call_tool(validate_input=False)
    async def call_tool(
        name: str, arguments: dict[str, Any]
    ) -> tuple[list[types.TextContent], dict[str, Any]]:
        if name != TOOL:
            raise ValueError(f"unknown tool {name!r}: this server has only {TOOL!r}")
        # Guardians read files: keep them off the loop that answers the client.
        repo_path: Any = arguments.get("repo_path")  # checked by run_guardians, not here
        guardians: Any = arguments.get("guardians")
        result = await anyio.to_thread.run_sync(run_guardians, repo_path, guardians)
        text = json.dumps(result, ensure_ascii=False, separators=(",", ":"))
        return [types.TextContent(type="text", text=text)], result

    return server


async def serve_stdio() -> None:
    """Serve on this process's stdin/stdout until the client closes them."""
    server = build_server()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
