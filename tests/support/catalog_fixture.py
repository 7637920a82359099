"""A tool catalog shaped like the bridge's, for unit tests of domain logic."""

from __future__ import annotations

from typing import Any

from contracts.operations import SafetyLevel
from contracts.tools import ToolCatalog, ToolSpec

_VEC = {"type": "array", "items": {"type": "number"}, "minItems": 3, "maxItems": 3}


def _spec(name: str, level: SafetyLevel, schema: dict[str, Any] | None = None) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=name,
        safety_level=level,
        input_schema=schema or {"type": "object"},
    )


CATALOG = ToolCatalog(
    version="test",
    blender_version="5.0.1",
    tools=[
        _spec("scene.snapshot", "read_only"),
        _spec(
            "object.create",
            "safe_write",
            {
                "type": "object",
                "additionalProperties": False,
                "required": ["primitive"],
                "properties": {
                    "primitive": {"enum": ["cube", "uv_sphere"]},
                    "name": {"type": "string"},
                    "location": _VEC,
                },
            },
        ),
        _spec("object.transform", "safe_write"),
        _spec("object.rename", "safe_write"),
        _spec("object.delete", "destructive"),
        _spec("modifier.add", "safe_write"),
        _spec("modifier.set", "safe_write"),
        _spec("modifier.remove", "safe_write"),
        _spec("material.assign", "safe_write"),
    ],
)
