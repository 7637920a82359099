"""The official Python SDK's 2.x client (MCP 2026-07-28) driving blendmesh, as a host would.

Run by the interpreter of a separate environment holding ``mcp`` 2.x (the 1.x SDK the
server uses cannot be installed beside it; ``.ci/run`` makes the environment), so this
file imports nothing of blendmesh. ``python mcp2_client.py URL TOKEN SCENE ANSWER``
makes a Box in SCENE at ``/mcp``, then asks to delete it; the SDK answers the
approval's InputRequiredResult with ANSWER (accept or decline) through its elicitation
callback and retries by itself. With ``stdio`` for URL and a JSON ``{"command", "args",
"env", "cwd"}`` for TOKEN it starts that server (``blendmesh mcp``) on stdio instead.
Prints one JSON object saying what happened.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from typing import Any

import httpx2
import mcp.types as types
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client


def _plan(tool: str, safety: str) -> dict[str, Any]:
    args = {"name": "Box"} if tool == "object.delete" else {"primitive": "cube", "name": "Box"}
    op = {
        "operation_id": "a",
        "tool_name": tool,
        "args": args,
        "depends_on": [],
        "safety_level": safety,
    }
    return {"request_id": f"mcp2-{uuid.uuid4().hex[:12]}", "operations": [op]}


async def main(url: str, token: str, scene: str, answer: str) -> dict[str, Any]:
    asked: list[str] = []

    async def elicit(_ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        content = {"approve": True} if answer == "accept" else None
        return types.ElicitResult(action=answer, content=content)  # type: ignore[arg-type]

    if url == "stdio":
        return await _drive(StdioServerParameters(**json.loads(token)), scene, elicit, asked)
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http:
        return await _drive(streamable_http_client(url, http_client=http), scene, elicit, asked)


async def _drive(server: Any, scene: str, elicit: Any, asked: list[str]) -> dict[str, Any]:
    async with Client(server, elicitation_callback=elicit, read_timeout_seconds=300) as client:
        tools = await client.list_tools()
        create = _plan("object.create", "safe_write")
        made = await client.call_tool("run", {"scene_id": scene, "plan": create})
        doomed = _plan("object.delete", "destructive")
        deleted = await client.call_tool("run", {"scene_id": scene, "plan": doomed})
        return {
            "protocol_version": client.protocol_version,
            "tools": sorted(t.name for t in tools.tools),
            "made": (made.structured_content or {}).get("status"),
            "deleted": deleted.structured_content,
            "asked": asked,
        }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(*sys.argv[1:5]))))
