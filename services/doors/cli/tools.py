"""``blendmesh tools``: the tools a plan may name, found on demand as the MCP door finds
them (``contracts/tool_categories.py``, ADR 0066): the core set and the categories, one
category, or a search."""

from __future__ import annotations

import argparse
import json
import sys

from rich.console import Console

from contracts import tool_categories as found
from services.doors.cli.common import EXIT_OK, connected
from services.doors.cli.tables import Column, fitted_table
from services.doors.core.client import ClientError
from services.executor.client import KvCatalog
from services.runtime.service.settings import Settings

COLUMNS: list[Column] = [("name", 0), ("category", 0), ("safety_level", 100), ("description", 0)]


async def cmd_tools(args: argparse.Namespace, settings: Settings, out: Console) -> int:
    if args.category is not None and args.category not in found.ABOUT:
        named = ", ".join(sorted(found.ABOUT))
        raise ClientError(f"no category {args.category!r}; the categories: {named}")
    if args.search is not None and not 0 < len(args.search) <= found.MAX_QUERY:
        raise ClientError(f"--search takes 1 to {found.MAX_QUERY} characters")
    if not 1 <= args.limit <= found.MAX_RESULTS:
        raise ClientError(f"--limit takes a number from 1 to {found.MAX_RESULTS}")
    async with connected(settings, ("executor",)) as bus:
        catalog = await KvCatalog(bus.js, settings.prefix).get()
    if catalog is None:
        raise ClientError("no executor has published its tool catalog yet; retry shortly")
    index = found.categories(catalog)
    if args.search is not None:
        tools = found.search(catalog, args.search, args.category, args.limit)
    elif args.category is not None:
        tools = found.category_listing(catalog, args.category)
        if not tools:
            have = ", ".join(c["category"] for c in index)
            raise ClientError(f"category {args.category} has no tools here; these do: {have}")
    else:
        tools = found.default_listing(catalog)["tools"]
    if args.json:
        sys.stdout.write(json.dumps({"tools": tools, "categories": index}, indent=2) + "\n")
        return EXIT_OK
    out.print(fitted_table("tools", tools, COLUMNS, out.width, stretch="description"))
    if args.search is None and args.category is None:
        for entry in index:
            out.print(f"{entry['category']}: {', '.join(entry['tools'])}", highlight=False)
    elif not tools:
        out.print("no tool found; try other words, or `blendmesh tools` for the categories")
    return EXIT_OK
