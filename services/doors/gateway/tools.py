"""``GET /api/tools``: the tools a plan may name, found on demand as the MCP door's
``list_category`` and ``search_tools`` find them (ADR 0066): bare, the core set and the
categories; with ``category``, its tools; with ``search``, the best matches."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from contracts import tool_categories as found
from services.doors.gateway.auth import current_user
from services.doors.gateway.context import Gateway, gateway
from services.doors.gateway.errors import NotFound, Unavailable, responses
from services.executor.client import KvCatalog

router = APIRouter(prefix="/api/tools", tags=["tools"])
User = Annotated[str, Depends(current_user)]
Gw = Annotated[Gateway, Depends(gateway)]
CATEGORY = f"^({'|'.join(sorted(found.ABOUT))})$"  # published in the schema: a host sees them


class _Camel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class ToolEntry(_Camel):
    """A tool: its category, what it does, its safety level and its schemas."""

    name: str
    category: str
    description: str
    safety_level: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None


class CategoryEntry(_Camel):
    category: str
    about: str
    tools: list[str]


class ToolList(_Camel):
    catalog_version: str
    tools: list[ToolEntry]
    categories: list[CategoryEntry]


@router.get("", response_model=ToolList, responses=responses(401, 404, 422, 503))
async def tools(
    _user: User,
    gw: Gw,
    category: Annotated[str | None, Query(pattern=CATEGORY)] = None,
    search: Annotated[str | None, Query(min_length=1, max_length=found.MAX_QUERY)] = None,
    limit: Annotated[int, Query(ge=1, le=found.MAX_RESULTS)] = 8,
) -> ToolList:
    """The core tools and the categories; one category's tools; or a search's."""
    catalog = await KvCatalog(gw.bus.js, gw.prefix).get()
    if catalog is None:
        raise Unavailable("no executor has published its tool catalog yet; retry shortly")
    index = found.categories(catalog)
    if search is not None:
        shown = found.search(catalog, search, category, limit)
    elif category is not None:
        shown = found.category_listing(catalog, category)
        if not shown:
            raise NotFound(f"category {category} has no tools here")
    else:
        shown = found.default_listing(catalog)["tools"]
    return ToolList(
        catalog_version=catalog.version,
        tools=[ToolEntry(**entry) for entry in shown],
        categories=[CategoryEntry(**entry) for entry in index],
    )
