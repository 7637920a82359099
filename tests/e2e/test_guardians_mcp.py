"""``blendmesh mcp guardians`` as an MCP client starts it: over stdio, with the official
SDK's own client, exactly one tool, answering what ``run_guardians`` answers in-process."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from msgspec.structs import replace

from services.guardians import GUARDIAN_ROUTING_TABLE, run_guardians
from tests.support.guardian_scenes import good_scene, scatter_group, write_repo
from tests.support.meshes import BLENDMESH, command_env

PRODUCT_IDS = list(GUARDIAN_ROUTING_TABLE)


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


@asynccontextmanager
async def guardians_server(home: Path) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=BLENDMESH,
        args=["--home", str(home), "mcp", "guardians"],
        env=command_env(),
        cwd=str(home),
    )
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@pytest.mark.clause("003-§tool-surface.1")
async def test_mcp_guardians_lists_exactly_one_tool(tmp_path: Path) -> None:
    """003 §1: exactly one tool, run_guardians(repo_path, guardians)."""
    async with guardians_server(tmp_path) as session:
        listed = await session.list_tools()
        other = await session.call_tool("run_everything", {})
    assert other.isError is True
    assert [tool.name for tool in listed.tools] == ["run_guardians"]
    schema = listed.tools[0].inputSchema
    assert set(schema["properties"]) == {"repo_path", "guardians"}
    assert listed.tools[0].annotations is not None
    assert listed.tools[0].annotations.readOnlyHint is True


async def test_mcp_guardians_call_matches_in_process_result(tmp_path: Path) -> None:
    """The tool's structured content and JSON text are run_guardians' result."""
    scene = replace(good_scene(), node_groups=[scatter_group(connected=False)])
    repo = write_repo(tmp_path / "repo", scene)
    ids = [*PRODUCT_IDS, "nope", "output_connected"]
    async with guardians_server(tmp_path) as session:
        answer = await session.call_tool("run_guardians", {"repo_path": repo, "guardians": ids})
    expected = run_guardians(repo, ids)
    assert answer.isError is False
    assert canonical(answer.structuredContent) == canonical(expected)
    text = answer.content[0]
    assert text.type == "text" and canonical(json.loads(text.text)) == canonical(expected)
    assert expected["ok"] is False  # the unknown id fails the run closed


async def test_mcp_guardians_when_guardians_not_a_list_fails_closed(tmp_path: Path) -> None:
    """003 §3.3: malformed input is the orchestrator's fail-closed result, not an error."""
    async with guardians_server(tmp_path) as session:
        answer = await session.call_tool(
            "run_guardians", {"repo_path": "/repos/example", "guardians": "output_connected"}
        )
        missing = await session.call_tool("run_guardians", {})
    assert answer.isError is False
    not_a_list: Any = "output_connected"
    assert answer.structuredContent == run_guardians("/repos/example", not_a_list)
    assert missing.structuredContent == {
        "tool": "run_guardians",
        "repo_path": "",
        "ok": False,
        "fail_closed": True,
        "guardians": [],
    }
