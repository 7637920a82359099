"""``list_category`` and ``search_tools`` as a host calls them over the stdio server's
in-memory streams, on a published catalog: what they find, and what a hostile caller's
arguments get (a tool error naming the argument, never a crash)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, cast

import anyio
import jsonschema
import msgspec
from mcp import ClientSession
from mcp.shared.memory import create_client_server_memory_streams

from contracts.tool_answers import output_schema
from services.doors.mcp.door import Door
from services.doors.mcp.server import build_server, local_user
from tests.unit.contracts.test_tool_categories import CATALOG


class Shelf:
    async def catalog(self) -> bytes:
        return msgspec.json.encode(CATALOG)


@asynccontextmanager
async def host() -> AsyncIterator[ClientSession]:
    server = build_server(cast(Door, Shelf()), local_user("ana"))
    async with (
        create_client_server_memory_streams() as (client, (read, write)),
        anyio.create_task_group() as tasks,
    ):
        tasks.start_soon(server.run, read, write, server.create_initialization_options())
        async with ClientSession(*client) as session:
            await session.initialize()
            yield session
        tasks.cancel_scope.cancel()


async def answered(session: ClientSession, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    answer = await session.call_tool(tool, args)
    body = answer.structuredContent
    assert body is not None, answer.content
    jsonschema.validate(body, output_schema(tool))
    assert answer.isError == ("error" in body), body
    return body


async def test_list_category_when_called_bare_answers_core_tools_and_the_index() -> None:
    async with host() as session:
        listed = {t.name for t in (await session.list_tools()).tools}
        core = await answered(session, "list_category", {})
    assert {"list_category", "search_tools"} <= listed
    assert [t["name"] for t in core["tools"]] == ["object.create"]
    assert {c["category"] for c in core["categories"]} >= {"modelling", "uv", "shading"}


async def test_list_category_and_search_when_asked_find_every_categorys_tools() -> None:
    async with host() as session:
        for tool in CATALOG.tools:
            name_words = tool.name.split(".", 1)[1].replace("_", " ")
            found = await answered(session, "search_tools", {"query": name_words})
            assert tool.name in [t["name"] for t in found["tools"]], tool.name
            category = found["tools"][0]["category"]
            listed = await answered(session, "list_category", {"category": category})
            assert listed["tools"] and all(t["category"] == category for t in listed["tools"])


async def test_finding_tools_when_arguments_are_hostile_answer_tool_errors() -> None:
    async with host() as session:
        unknown = await answered(session, "list_category", {"category": "../../etc"})
        huge = await answered(session, "search_tools", {"query": "x" * 10_000})
        typed = await answered(session, "search_tools", {"query": ["bevel"]})
        many = await answered(session, "search_tools", {"query": "mesh", "limit": 10**9})
        extra = await answered(session, "search_tools", {"query": "mesh", "user": "ben"})
        empty = await answered(session, "list_category", {"category": "python"})
    said = {
        "category": unknown, "query": huge, "query ": typed, "limit": many, "unknown": extra
    }  # fmt: skip
    for word, refused in said.items():
        assert refused["error"]["type"] == "ValidationError", refused
        assert word.strip() in refused["error"]["message"], refused
    assert empty["error"]["type"] == "NotFound"
    assert "no tools here" in empty["error"]["message"]
    assert "modelling" in empty["error"]["message"]
