"""Plans and small helpers the MCP door's tests share (stdio and HTTP)."""

from __future__ import annotations

import uuid
from typing import Any

import mcp.types as types


def op(op_id: str, tool: str, args: dict[str, Any], safety: str = "safe_write") -> dict[str, Any]:
    return {
        "operation_id": op_id,
        "tool_name": tool,
        "args": args,
        "depends_on": [],
        "safety_level": safety,
    }


def plan(*ops: dict[str, Any]) -> dict[str, Any]:
    """A spec 000 operation set with a fresh request id (a reused one is idempotent)."""
    return {"request_id": f"mcp-{uuid.uuid4().hex[:12]}", "operations": list(ops)}


def create(name: str) -> dict[str, Any]:
    return plan(op("a", "object.create", {"primitive": "cube", "name": name}))


def delete(name: str) -> dict[str, Any]:
    return plan(op("d", "object.delete", {"name": name}, "destructive"))


def structured(answer: types.CallToolResult) -> dict[str, Any]:
    assert answer.structuredContent is not None, answer.content
    return answer.structuredContent


def error_type(answer: types.CallToolResult) -> str:
    assert answer.isError is True, answer.content
    return str(structured(answer)["error"]["type"])
