"""An executor of a later blendmesh release, for rolling-upgrade tests (ADR 0053).

The stock executor, whose catalog declares one read-only tool more, as a release that
added a tool would: its catalog version differs, and it runs every other tool as the
stock one does. Started as a process (``python -m tests.support.next_release_executor``)
beside stock executors on one mesh.
"""

from __future__ import annotations

from typing import Any

from contracts.tools import ToolCatalog, catalog_from_mcp
from services.executor import app
from services.runtime.service.host import run_service

ADDED: dict[str, Any] = {
    "name": "scene.release_notes",
    "description": "What this release of the executor added (declared only; never planned).",
    "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False},
    "_meta": {"blendmesh": {"safety_level": "read_only"}},
}


def next_release_catalog(tools: list[dict[str, Any]], blender_version: str) -> ToolCatalog:
    return catalog_from_mcp([*tools, ADDED], blender_version)


if __name__ == "__main__":
    app.catalog_from_mcp = next_release_catalog  # type: ignore[assignment]
    run_service("executor", app.start)
