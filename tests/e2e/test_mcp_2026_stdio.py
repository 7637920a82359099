"""``blendmesh mcp`` on stdio for a 2026-07-28 host: the official Python SDK's 2.x
client starts the command as a host does, probes ``server/discover``, stays on
2026-07-28, and answers a destructive run's approval by Multi Round-Trip Request."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.meshes import BLENDMESH, command_env

ROOT = Path(__file__).resolve().parents[2]
MCP2_PYTHON = Path(os.environ.get("BLENDMESH_MCP2_PYTHON", ROOT / ".venv-mcp2" / "bin" / "python"))
HAS_MCP2 = MCP2_PYTHON.exists()

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not HAS_MCP2,
        reason=f"no Python with the mcp 2.x SDK at {MCP2_PYTHON} (.ci/run makes .venv-mcp2; "
        "BLENDMESH_MCP2_PYTHON names another)",
    ),
]


async def test_sdk2_client_on_stdio_speaks_2026_and_approves_by_mrtr(tmp_path: Path) -> None:
    server = {
        "command": BLENDMESH,
        "args": ["--home", str(tmp_path), "-v", "mcp"],
        "env": command_env({"BLENDMESH_USER": "ana"}),
        "cwd": str(tmp_path),
    }
    script = ROOT / "tests" / "support" / "mcp2_client.py"
    process = await asyncio.create_subprocess_exec(
        str(MCP2_PYTHON), str(script), "stdio", json.dumps(server), "stdio-2026", "accept",
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 300)
    assert process.returncode == 0, err.decode()[-4000:]
    seen: dict[str, Any] = json.loads(out)
    assert seen["protocol_version"] == "2026-07-28"
    assert "run" in seen["tools"] and seen["made"] == "completed"
    [question] = seen["asked"]
    assert "object.delete" in question
    assert seen["deleted"]["status"] == "completed"
    assert seen["deleted"]["user"] == "ana"
