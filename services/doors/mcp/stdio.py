"""``blendmesh mcp`` on stdin/stdout, for hosts of either revision: the first message
decides, as MCP 2026-07-28 asks of a server that speaks both.

A first ``initialize`` (or anything not of 2026-07-28) is a 2025-11-25 host: the 1.x
SDK's server takes the whole conversation, that first line included. A first request
whose ``_meta`` names 2026-07-28 (a ``server/discover`` probe, or any call) starts the
stateless loop: each line is one request, answered by ``modern.Modern`` on a line of its
own, several at once (a run may wait long; a status read should not wait behind it).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator
from io import TextIOWrapper
from typing import Any, Protocol, cast

import anyio
from mcp.server.stdio import stdio_server
from mcp_types import PROTOCOL_VERSION_META_KEY

from services.doors.mcp.door import Door
from services.doors.mcp.envelope import VERSIONS
from services.doors.mcp.modern import Modern
from services.doors.mcp.server import build_server, door_for, local_user
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings

CANCELLED = "notifications/cancelled"
_UNREADABLE = object()  # a line that is not JSON
MAX_IN_FLIGHT = 16  # requests answered at once; a host sends a few, a runaway one waits


class Lines(Protocol):
    async def readline(self) -> str: ...

    def __aiter__(self) -> AsyncIterator[str]: ...


class Out(Protocol):
    async def write(self, text: str) -> Any: ...

    async def flush(self) -> Any: ...


def is_modern(line: str) -> bool:
    """Whether ``line`` is a 2026-07-28 request (its ``_meta`` names the revision)."""
    try:
        message = json.loads(line)
    except ValueError:
        return False
    if not isinstance(message, dict) or message.get("method") == "initialize":
        return False
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and meta.get(PROTOCOL_VERSION_META_KEY) in VERSIONS


class _Replayed:
    """``rest``'s lines after ``first``: the 1.x server reads the line already read."""

    def __init__(self, first: str, rest: Lines) -> None:
        self._first, self._rest = first, rest

    async def __aiter__(self) -> AsyncIterator[str]:
        yield self._first
        async for line in self._rest:
            yield line


def _cancelled(message: Any) -> Any:
    """The request id a ``notifications/cancelled`` names; None for any other message."""
    if not isinstance(message, dict) or message.get("method") != CANCELLED:
        return None
    params = message.get("params")
    return params.get("requestId") if isinstance(params, dict) else None


async def serve_modern(modern: Modern, user: str, first: str, rest: Lines, out: Out) -> None:
    """Answer ``first`` and every line after it until stdin closes; answers in any order,
    each on one line, as each request's id says whose it is. ``notifications/cancelled``
    (stdio's way to cancel on 2026-07-28) stops answering its request: the call stops
    waiting, and a run it started goes on (``cancel_run`` or ``tasks/cancel`` stop runs)."""
    writing = asyncio.Lock()
    room = asyncio.Semaphore(MAX_IN_FLIGHT)
    pending: dict[asyncio.Task[None], Any] = {}

    async def answer(message: Any) -> None:
        if message is _UNREADABLE:
            parse = {"code": -32700, "message": "a line is not JSON; send one JSON-RPC request"}
            response: dict[str, Any] | None = {"jsonrpc": "2.0", "id": None, "error": parse}
        else:
            response = await modern.answer(user, message)
        if response is not None:
            async with writing:
                await out.write(json.dumps(response, separators=(",", ":")) + "\n")
                await out.flush()

    def finished(task: asyncio.Task[None]) -> None:
        # Here, not in `answer`: a task cancelled before it ran never enters it.
        pending.pop(task, None)
        room.release()

    async def start(line: str) -> None:
        if not line.strip():
            return
        try:
            message = json.loads(line)
        except ValueError:
            message = _UNREADABLE
        cancelled = _cancelled(message)
        if cancelled is not None:
            for task, request_id in list(pending.items()):
                if request_id == cancelled:
                    task.cancel()
            return
        await room.acquire()
        task = asyncio.create_task(answer(message))
        pending[task] = message.get("id") if isinstance(message, dict) else None
        task.add_done_callback(finished)

    await start(first)
    async for line in rest:
        await start(line)
    if pending:  # stdin closed: the answers under way still go out
        await asyncio.gather(*pending, return_exceptions=True)


async def serve(door: Door, user: str, stdin: Lines, stdout: Out) -> None:
    """Serve one host on ``stdin``/``stdout`` as ``user``, in the revision it speaks."""
    first = await stdin.readline()
    if not first:
        return
    if is_modern(first):
        await serve_modern(Modern(door), user, first, stdin, stdout)
        return
    server = build_server(door, local_user(user))
    # The 1.x transport reads stdin with `async for`; it is given the first line again.
    replayed = cast(anyio.AsyncFile[str], _Replayed(first, stdin))
    async with stdio_server(replayed, cast(anyio.AsyncFile[str], stdout)) as (read, write):
        await server.run(read, write, server.create_initialization_options())


async def serve_stdio(settings: Settings, bus: Bus) -> None:
    """Serve on this process's stdin/stdout, as ``settings.user``, until the host closes them."""
    # As the SDK's stdio transport does: UTF-8 whatever the platform's default.
    stdin = anyio.wrap_file(TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
    stdout = anyio.wrap_file(TextIOWrapper(sys.stdout.buffer, encoding="utf-8"))
    with contextlib.suppress(anyio.ClosedResourceError):
        await serve(door_for(settings, bus), settings.user, stdin, stdout)
