"""A real Blender bridge for integration tests: one process a module, reset before each test.

A test module takes its fixtures with ``shared_bridge, bridge = bridge_fixtures()``. Every
successful answer that bridge gives is held to its tool's ``outputSchema``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest_asyncio

from contracts.bridge import ToolResult
from services.executor.adapters.bridge_client import BridgeProcess

_call_ids = itertools.count(1)
PROJECT_ROOT = Path(__file__).resolve().parents[2]


class CheckedBridge(BridgeProcess):
    """A bridge whose successful answers are each checked against the ``outputSchema`` its
    tool declares in ``tools/list``: a tool that answers other than it says fails the test
    that called it."""

    _declared: dict[str, jsonschema.Draft202012Validator]

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        mcp_call_id: str,
        timeout: float | None = None,
    ) -> ToolResult:
        result = await super().call_tool(name, arguments, mcp_call_id, timeout)
        if not result.ok:
            return result
        if not hasattr(self, "_declared"):
            self._declared = {
                t["name"]: jsonschema.Draft202012Validator(t["outputSchema"])
                for t in await self.list_tools()
                if "outputSchema" in t
            }
        assert name in self._declared, f"tool {name} declares no outputSchema"
        errors = sorted(self._declared[name].iter_errors(result.data), key=str)
        assert not errors, f"{name} answered outside its outputSchema: {errors[0]}"
        return result


def bridge_fixtures() -> tuple[Any, Any]:
    """``shared_bridge`` (one bridge process for the module) and ``bridge`` (that bridge,
    its scene reset to empty before each test)."""

    @pytest_asyncio.fixture(scope="module", loop_scope="module", name="shared_bridge")
    async def shared_bridge() -> AsyncIterator[BridgeProcess]:
        process = CheckedBridge()
        await process.start()
        yield process
        await process.close()

    @pytest_asyncio.fixture(loop_scope="module", name="bridge")
    async def bridge(shared_bridge: BridgeProcess) -> BridgeProcess:
        await shared_bridge.reset()
        return shared_bridge

    return shared_bridge, bridge


async def call(bridge: BridgeProcess, tool: str, /, **arguments: Any) -> ToolResult:
    return await bridge.call_tool(tool, arguments, mcp_call_id=f"test-{next(_call_ids)}")


async def ok(bridge: BridgeProcess, tool: str, /, **arguments: Any) -> ToolResult:
    result = await call(bridge, tool, **arguments)
    assert result.ok, result
    return result


# What a ``script_result`` script starts with to call a bridge server in its own Python, as
# the executor does: ``answer(method, **params)`` is the server's answer to one request,
# on an empty scene. Not a format string: a script's f-string goes after it.
SERVER_PRELUDE = """
import json, logging, sys
logging.basicConfig(level=logging.ERROR)
from services.bridge import server
from services.bridge.tools import scene
scene.reset()
s = server.Server(sys.stdout)
def answer(method, **params):
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    return s.handle_line(line)
"""


async def script_result(script: str) -> tuple[Any, str]:
    """Run ``script`` in a Python of its own from the project's root (bpy imported there,
    never here); the JSON it printed on its line starting ``RESULT ``, and all it wrote."""
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", script],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(result.removeprefix("RESULT ")), done.stdout + done.stderr


def bridge_pids(parent: int) -> list[int]:
    """The pids of the Blender bridges that process ``parent`` runs now (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        state, ppid = stat[stat.rindex(")") + 2 :].split()[:2]
        if int(ppid) == parent and state != "Z" and b"services.bridge" in command:
            found.append(int(entry.name))
    return found
