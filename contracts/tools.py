"""The tool catalog: what the Blender bridge's registry declares about each tool.

The executor publishes the catalog it reads from the bridge (MCP ``tools/list``), so the
planner and the policy judge plans against the registry that will actually run them.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

import msgspec

from contracts.operations import SafetyLevel

SafetyMode = Literal["headless_safe", "ui_assisted", "unsafe_ops"]
DeterminismClass = Literal["deterministic", "seeded", "nondeterministic"]
IdempotenceClass = Literal["idempotent", "repeatable_with_accumulation", "non_idempotent"]


class ToolSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One registered tool (spec 001 tool metadata, spec 002 §5 registry contract)."""

    name: str
    description: str
    input_schema: dict[str, Any]
    safety_level: SafetyLevel
    safety_mode: SafetyMode = "headless_safe"
    determinism_class: DeterminismClass = "deterministic"
    idempotence_class: IdempotenceClass = "idempotent"
    min_blender_version: tuple[int, int, int] = (4, 2, 0)
    compensation: str = "checkpoint"  # inverse tool name, "checkpoint" or "none"
    # What a successful call's result data holds (MCP outputSchema), where the tool says.
    output_schema: dict[str, Any] | None = None


class ToolCatalog(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The whole registry, with the Blender profile of the bridge that declared it."""

    version: str  # content hash of the tools, so a plan can name the registry it was made for
    blender_version: str
    tools: list[ToolSpec]

    def get(self, name: str) -> ToolSpec | None:
        return next((tool for tool in self.tools if tool.name == name), None)

    @property
    def names(self) -> list[str]:
        return [tool.name for tool in self.tools]


def catalog_from_mcp(tools: list[dict[str, Any]], blender_version: str) -> ToolCatalog:
    """Build a catalog from MCP ``tools/list`` entries carrying ``_meta.blendmesh``."""
    specs = []
    for entry in sorted(tools, key=lambda t: t["name"]):
        meta = entry.get("_meta", {}).get("blendmesh", {})
        specs.append(
            msgspec.convert(
                {
                    "name": entry["name"],
                    "description": entry.get("description", ""),
                    "input_schema": entry.get("inputSchema", {"type": "object"}),
                    "output_schema": entry.get("outputSchema"),
                    **meta,
                },
                type=ToolSpec,
            )
        )
    digest = msgspec.json.encode(specs, order="sorted")
    version = hashlib.sha256(digest).hexdigest()[:16]
    return ToolCatalog(version=version, blender_version=blender_version, tools=specs)
