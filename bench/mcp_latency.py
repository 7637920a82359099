"""A one-operation run through the MCP front door against the same run via ``blendmesh run``.

    .venv/bin/python bench/mcp_latency.py [--runs 10]

MCP: one ``blendmesh mcp`` process (stdio, the SDK's client), its mesh started once, then
``run`` tool calls. CLI: one ``blendmesh run --plan`` process per run, each starting and
stopping its embedded mesh, as a shell user runs it. Prints the median of each.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

BLENDMESH = str(Path(sys.executable).parent / "blendmesh")


def plan(i: int) -> dict[str, Any]:
    op = {
        "operation_id": "a",
        "tool_name": "object.create",
        "args": {"primitive": "cube", "name": f"Box{i}"},
        "depends_on": [],
        "safety_level": "safe_write",
    }
    return {"request_id": f"bench-{uuid.uuid4().hex[:12]}", "operations": [op]}


async def mcp_latencies(runs: int, home: Path) -> list[float]:
    params = StdioServerParameters(command=BLENDMESH, args=["--home", str(home), "mcp"])
    seconds = []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for i in range(runs + 1):  # the first run warms the bridge up
            started = time.perf_counter()
            answer = await session.call_tool("run", {"plan": plan(i), "scene_id": "bench"})
            elapsed = time.perf_counter() - started
            assert answer.structuredContent and answer.structuredContent["status"] == "completed"
            if i:
                seconds.append(elapsed)
    return seconds


def cli_latencies(runs: int, home: Path) -> list[float]:
    seconds = []
    for i in range(runs):
        path = home.parent / f"plan{i}.json"
        path.write_text(json.dumps(plan(i)))
        started = time.perf_counter()
        proc = subprocess.run(
            [BLENDMESH, "--home", str(home), "run", "--json", "--plan", str(path)],
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )
        seconds.append(time.perf_counter() - started)
        assert proc.returncode == 0, proc.stderr
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="blendmesh-bench-") as tmp:
        mcp = asyncio.run(mcp_latencies(args.runs, Path(tmp) / "mcp"))
        cli = cli_latencies(args.runs, Path(tmp) / "cli")
    m50, c50 = statistics.median(mcp), statistics.median(cli)
    print(f"one-operation run, {args.runs} runs each (median)")
    print(f"MCP `run` tool call (stdio, mesh up):     {m50 * 1e3:8.1f} ms")
    print(f"`blendmesh run --plan` (process + mesh):  {c50 * 1e3:8.1f} ms")
    print(f"ratio blendmesh run / mcp at p50: {c50 / m50:.1f}x")


if __name__ == "__main__":
    main()
