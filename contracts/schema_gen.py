"""Generate the published JSON Schemas from the contract types.

Run ``python -m contracts.schema_gen`` after changing a contract; a test fails while the
committed files differ from what the types generate.
"""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path
from typing import Any

import msgspec

from contracts import asyncapi
from contracts.geonodes import GeoNodeResponse
from contracts.operations import OperationSet

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


def _dedented(value: Any) -> Any:
    """``value`` with every description a docstring gave dedented: msgspec 0.23 dedents
    them and 0.22 does not, and the published files must not depend on which is installed."""
    if isinstance(value, dict):
        return {
            k: inspect.cleandoc(v) if k == "description" and isinstance(v, str) else _dedented(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_dedented(v) for v in value]
    return value


def render(schema: dict[str, Any]) -> str:
    return json.dumps(_dedented(schema), indent=2, sort_keys=False) + "\n"


GENERATED = {
    "planner-operations.v1.json": planner_operations_schema,
    "geonode-response.v1.json": geonode_response_schema,
    # The bus (docs/bus.md): the AsyncAPI document and events/<type>.v1.json per event.
    **asyncapi.generated(),
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
