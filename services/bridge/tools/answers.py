"""outputSchema fragments the text, curve, rig and render tools share: what a successful
call's ``data`` holds, so a host can read an answer without guessing its shape."""

from __future__ import annotations

from typing import Any

from contracts.bridge import Compensation

NUMBER: dict[str, Any] = {"type": "number"}
INTEGER: dict[str, Any] = {"type": "integer"}
STRING: dict[str, Any] = {"type": "string"}
BOOLEAN: dict[str, Any] = {"type": "boolean"}
VECTOR: dict[str, Any] = {"type": "array", "items": NUMBER, "minItems": 3, "maxItems": 3}
NAMES: dict[str, Any] = {"type": "array", "items": STRING}


def answer(required: dict[str, Any], optional: dict[str, Any] | None = None) -> dict[str, Any]:
    """A closed object schema: every key of ``required`` present, ``optional`` allowed."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": sorted(required),
        "properties": {**required, **(optional or {})},
    }


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` or null."""
    return {"anyOf": [schema, {"type": "null"}]}


def deleting(name: str) -> Compensation:
    """The inverse of a call that made the object ``name``."""
    return Compensation(tool="object.delete", arguments={"name": name})


RGB: dict[str, Any] = {"type": "array", "items": NUMBER, "minItems": 3, "maxItems": 3}
RGBA: dict[str, Any] = {"type": "array", "items": NUMBER, "minItems": 4, "maxItems": 4}
COUNT: dict[str, Any] = {"type": "integer", "minimum": 0}
# ``transform_of``: location, rotation in degrees and scale, as the tools take them.
TRANSFORM: dict[str, Any] = {"location": VECTOR, "rotation": VECTOR, "scale": VECTOR}
# A value read back from Blender as JSON (``rna_json``): a number, a boolean, a string, a
# list or null, whatever the property holds.
JSON_VALUE: dict[str, Any] = {}
PLACED = answer({"name": STRING, **TRANSFORM})
