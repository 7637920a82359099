"""Generate the published JSON Schemas from the contract types.

Run ``python -m contracts.schema_gen`` after changing a contract; a test fails while the
committed files differ from what the types generate.
"""

from __future__ import annotations

import json
import sys
from functools import partial
from pathlib import Path
from typing import Any

import msgspec

from contracts import asyncapi, tool_answers
from contracts.geonodes import GeoNodeResponse
from contracts.operations import OperationSet
from contracts.schema_text import dedented

SCHEMA_DIR = Path(__file__).parent / "schemas"


def planner_operations_schema() -> dict[str, Any]:
    """The spec 000 planner schema, as the OperationSet type defines it."""
    generated = msgspec.json.schema(OperationSet)
    defs = generated["$defs"]
    root = dict(defs["OperationSet"])
    root["properties"] = dict(root["properties"])
    root["properties"]["operations"] = {
        **root["properties"]["operations"],
        "items": defs["Operation"],
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://blendmesh.dev/schemas/planner-operations.v1.json",
        **root,
        "title": "Gemini Planner Operation Set",
    }


def geonode_response_schema() -> dict[str, Any]:
    """The spec 004 response (§1-§7), as the GeoNodeResponse type defines it."""
    generated = msgspec.json.schema(GeoNodeResponse)
    defs = dict(generated["$defs"])
    root = defs.pop("GeoNodeResponse")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://blendmesh.dev/schemas/geonode-response.v1.json",
        **root,
        "title": "GeoNode AI Assistant Response",
        "$defs": defs,
    }


def render(schema: dict[str, Any]) -> str:
    return json.dumps(dedented(schema), indent=2, sort_keys=False) + "\n"


GENERATED = {
    "planner-operations.v1.json": planner_operations_schema,
    "geonode-response.v1.json": geonode_response_schema,
    # The bus (docs/bus.md): the AsyncAPI document and events/<type>.v1.json per event.
    **asyncapi.generated(),
    # Each MCP tool's outputSchema (contracts/tool_answers.py).
    **{
        f"mcp/{tool}.json": partial(tool_answers.output_schema, tool)
        for tool in tool_answers.ANSWERS
    },
}


def published(name: str) -> dict[str, Any]:
    """The schema file ``name`` as this code publishes it."""
    loaded: dict[str, Any] = json.loads(render(GENERATED[name]()))
    return loaded


def main(argv: list[str] | None = None) -> int:
    """Write the schemas, or with ``--check`` fail if a committed one is out of date."""
    check = "--check" in (sys.argv[1:] if argv is None else argv)
    stale = []
    for name, build in GENERATED.items():
        path = SCHEMA_DIR / name
        text = render(build())
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"wrote {path}")
    if stale:
        print(f"out of date: {', '.join(stale)}; run python -m contracts.schema_gen")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
