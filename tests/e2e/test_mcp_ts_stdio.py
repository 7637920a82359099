"""``blendmesh mcp`` on stdio as a TypeScript host starts it: each official client line
spawns the command itself (the 2.x line, negotiating, probes ``server/discover`` on a
sibling process first, as its hosts do), and its session is checked as at ``/mcp``
(``tests/support/ts_mcp.py``): the 1.x line stays on 2025-11-25 and answers approvals by
form elicitation, the 2.x line moves to 2026-07-28 and answers them by Multi Round-Trip
Request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import ts_mcp
from tests.support.meshes import BLENDMESH, command_env

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.skipif(ts_mcp.missing() is not None, reason=str(ts_mcp.missing())),
]


def server(home: Path) -> str:
    """The stdio server as a host's configuration names it, on an embedded mesh in ``home``."""
    return json.dumps(
        {
            "command": BLENDMESH,
            "args": ["--home", str(home), "mcp"],
            "env": command_env({"BLENDMESH_USER": "ana"}),
            "cwd": str(home),
        }
    )


async def test_sdk_1x_on_stdio_speaks_2025_11_25_and_approves_by_elicitation(
    tmp_path: Path,
) -> None:
    report = await ts_mcp.drive("sdk-1.x", "ts-stdio-1", "stdio", server(tmp_path))
    ts_mcp.check(report, "sdk-1.x")
    assert report["tasks"]["server_declares"] is False


async def test_client_2x_on_stdio_speaks_2026_07_28_and_approves_by_mrtr(tmp_path: Path) -> None:
    report = await ts_mcp.drive("client-2.x", "ts-stdio-2", "stdio", server(tmp_path))
    ts_mcp.check(report, "client-2.x")
    ts_mcp.check_client_2x(report)
