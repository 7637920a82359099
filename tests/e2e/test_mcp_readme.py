"""README's MCP configuration blocks, started exactly as a host would start them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.support.meshes import command_env

ROOT = Path(__file__).resolve().parents[2]
PLACEHOLDER = "/path/to/blendmesh"


def readme_blocks() -> list[tuple[str, dict[str, Any]]]:
    """(host, its blendmesh server entry) for each JSON block of README's MCP section."""
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## MCP\n", 1)[1].split("\n## ", 1)[0]
    found = []
    for host, block in re.findall(r"\n([^\n]+):\n\n```json\n(.*?)\n```", section, re.S):
        servers = json.loads(block)
        # VS Code names the map `servers`; the other hosts `mcpServers`.
        found.append(
            (host.split(" (")[0], (servers.get("mcpServers") or servers["servers"])["blendmesh"])
        )
    return found


def test_readme_when_read_has_a_block_for_each_host() -> None:
    hosts = [host for host, _ in readme_blocks()]
    assert hosts == ["Claude Desktop", "Claude Code", "Cursor", "VS Code", "Gemini CLI"]


@pytest.mark.parametrize(("host", "entry"), readme_blocks())
async def test_readme_block_when_started_as_written_serves_the_tools(
    host: str, entry: dict[str, Any], tmp_path: Path
) -> None:
    home = str(tmp_path / "var")

    def placed(value: str) -> str:  # where the reader cloned blendmesh, and a fresh home
        return value.replace(f"{PLACEHOLDER}/var", home).replace(PLACEHOLDER, str(ROOT))

    params = StdioServerParameters(
        command=placed(entry["command"]),
        args=[placed(a) for a in entry["args"]],
        env=command_env(),
        cwd=str(tmp_path),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = {tool.name for tool in (await session.list_tools()).tools}
    expected = {"run", "runs", "run_status", "audit", "scene", "scenes", "scene_history"}
    assert expected | {"preview"} <= tools, host
