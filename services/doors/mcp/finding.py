"""The MCP tools that find blendmesh's tools on demand: ``list_category`` and
``search_tools`` (ADR 0066).

A host lists a dozen door tools; the tools a plan may name (100 or more) are found here,
the core set and the index of categories first, then one category or a search at a time,
so the host's context pays only for the schemas it asks for. A tool found here is called
through ``run`` with a plan naming it.
"""

from __future__ import annotations

from typing import Any

import mcp.types as types
import msgspec

from contracts import tool_categories as found
from contracts.tool_answers import output_schema
from contracts.tools import ToolCatalog
from services.doors.mcp import answers
from services.doors.mcp.door import Door, check
from services.doors.mcp.errors import NotFound
from services.doors.mcp.tools import _schema

_READ = types.ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)
_CATEGORY = {
    "type": "string",
    "enum": sorted(found.ABOUT),
    "description": "a category of tools, e.g. `modelling`",
}

LIST_CATEGORY = types.Tool(
    name="list_category",
    title="Tools by category",
    description=(
        "The tools a `run` plan may name. Without `category`: the core tools with their "
        "input schemas and every category with its tools' names. With `category`: every "
        "tool of it with its input and output schemas."
    ),
    inputSchema=_schema({"category": _CATEGORY}, []),
    outputSchema=output_schema("list_category"),
    annotations=_READ,
)
SEARCH_TOOLS = types.Tool(
    name="search_tools",
    title="Search the tools",
    description=(
        "Find the tools a `run` plan may name by words of what they do, e.g. `bevel edges` "
        "or `unwrap uv`, best first, with their input and output schemas."
    ),
    inputSchema=_schema(
        {
            "query": {"type": "string", "minLength": 1, "maxLength": found.MAX_QUERY},
            "category": _CATEGORY,
            "limit": {"type": "integer", "minimum": 1, "maximum": found.MAX_RESULTS, "default": 8},
        },
        ["query"],
    ),
    outputSchema=output_schema("search_tools"),
    annotations=_READ,
)
TOOLS = [LIST_CATEGORY, SEARCH_TOOLS]
NAMES = frozenset(t.name for t in TOOLS)


async def _catalog(door: Door) -> ToolCatalog:
    return msgspec.json.decode(await door.catalog(), type=ToolCatalog)


async def call(door: Door, name: str, args: Any) -> types.CallToolResult:
    """Answer one of ``TOOLS`` from the catalog the executor published."""
    schema = {t.name: t.inputSchema for t in TOOLS}[name]
    checked = check(args, schema)
    catalog = await _catalog(door)
    index = found.categories(catalog)
    category: str | None = checked.get("category")
    if name == "list_category" and category is None:
        listing = found.default_listing(catalog)
        said = f"{len(listing['tools'])} core tools, {len(index)} categories"
        return answers.result(said, listing)
    if category is not None and name == "list_category":
        tools = found.category_listing(catalog, category)
        if not tools:
            have = ", ".join(c["category"] for c in index)
            raise NotFound(f"category {category} has no tools here; categories with tools: {have}")
        summary = f"{len(tools)} tools in {category}"
    else:
        tools = found.search(catalog, checked["query"], category, checked.get("limit", 8))
        summary = f"{len(tools)} tools found" + (
            "" if tools else "; try other words, or list_category for the categories"
        )
    shown = [c for c in index if c["category"] == category] if category else index
    data = {"catalog_version": catalog.version, "tools": tools, "categories": shown}
    return answers.result(summary, data)
