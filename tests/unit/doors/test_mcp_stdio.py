"""``blendmesh mcp``'s stdio speaks the revision its host's first message names
(services/doors/mcp/stdio.py): an ``initialize`` gets the 2025-11-25 server, a request
naming 2026-07-28 the stateless loop, with answers one a line."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any, cast

from services.doors.mcp.door import Door
from services.doors.mcp.stdio import CANCELLED, MAX_IN_FLIGHT, is_modern, serve

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


class Lines:
    def __init__(self, *messages: Any) -> None:
        self._lines = [m if isinstance(m, str) else json.dumps(m) + "\n" for m in messages]

    async def readline(self) -> str:
        return self._lines.pop(0) if self._lines else ""

    async def __aiter__(self) -> AsyncIterator[str]:
        while self._lines:
            yield self._lines.pop(0)


class Out:
    def __init__(self) -> None:
        self.text = ""

    async def write(self, text: str) -> None:
        self.text += text

    async def flush(self) -> None:
        pass

    def answers(self) -> dict[Any, dict[str, Any]]:
        parsed = [json.loads(line) for line in self.text.splitlines()]
        return {a.get("id"): a for a in parsed}


def request(request_id: int, method: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {"_meta": META}}


NO_DOOR = cast(Door, None)  # discover and the lists read nothing of the mesh


async def test_first_request_of_2026_starts_the_stateless_loop() -> None:
    out = Out()
    notice = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}}
    lines = Lines(request(1, "server/discover"), request(2, "tools/list"), notice, "{oops\n")
    await serve(NO_DOOR, "ana", lines, out)
    answers = out.answers()
    assert answers[1]["result"]["supportedVersions"] == ["2026-07-28"]
    assert "run" in {t["name"] for t in answers[2]["result"]["tools"]}
    assert answers[None]["error"]["code"] == -32700  # the line that is not JSON
    assert len(answers) == 3  # the notification is not answered


async def test_first_initialize_gets_the_2025_11_25_server_with_that_line() -> None:
    out = Out()
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    await serve(NO_DOOR, "ana", Lines(initialize), out)
    answer = out.answers()[1]
    assert answer["result"]["protocolVersion"] == "2025-11-25"
    assert answer["result"]["serverInfo"]["name"] == "blendmesh"


async def test_nothing_on_stdin_ends_quietly() -> None:
    out = Out()
    await serve(NO_DOOR, "ana", Lines(), out)
    assert out.text == ""


def test_a_request_is_modern_only_when_its_meta_names_2026() -> None:
    assert is_modern(json.dumps(request(1, "tools/list")))
    assert not is_modern(json.dumps({**request(1, "initialize")}))
    assert not is_modern(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
    assert not is_modern("[1, 2")
    assert not is_modern("[]")


class Waiting:
    """A door whose runs never answer, as a mesh with a run waiting on a person."""

    async def runs(self, user: str, limit: int) -> list[Any]:
        await asyncio.Event().wait()
        raise AssertionError("never answered")


async def test_a_cancelled_request_is_not_answered_and_frees_its_room() -> None:
    out = Out()
    call = {**request(1, "tools/call"), "params": {"name": "runs", "_meta": META}}
    lines = [call]
    for n in range(MAX_IN_FLIGHT + 2):  # more than fit at once: each cancel frees its room
        lines.append({**call, "id": 100 + n})
        lines.append({"jsonrpc": "2.0", "method": CANCELLED, "params": {"requestId": 100 + n}})
    lines.append({"jsonrpc": "2.0", "method": CANCELLED, "params": {"requestId": 1}})
    lines.append(request(2, "tools/list"))
    await asyncio.wait_for(serve(cast(Door, Waiting()), "ana", Lines(*lines), out), 10)
    assert list(out.answers()) == [2]
