"""The MCP configuration blocks of README and docs/mcp.md, started exactly as a host would
start them."""

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


def _blocks(text: str) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for host, block in re.findall(r"\n([^\n]+):\n\n```json\n(.*?)\n```", text, re.S):
        servers = json.loads(block)
        # VS Code names the map `servers`; the other hosts `mcpServers`.
        found.append(
            (host.split(" (")[0], (servers.get("mcpServers") or servers["servers"])["blendmesh"])
        )
    return found


def readme_blocks() -> list[tuple[str, dict[str, Any]]]:
    """(host, its blendmesh server entry) for each JSON block of docs/mcp.md."""
    return _blocks((ROOT / "docs" / "mcp.md").read_text())


def test_readme_when_read_has_a_block_for_each_host() -> None:
    hosts = [host for host, _ in readme_blocks()]
    assert hosts == ["Claude Desktop", "Claude Code", "Cursor", "VS Code", "Gemini CLI"]


def test_readme_quickstart_when_read_shows_a_block_of_the_mcp_page() -> None:
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## From an MCP host\n", 1)[1].split("\n## ", 1)[0]
    assert _blocks(section) and all(block in readme_blocks() for block in _blocks(section))


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
