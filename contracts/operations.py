"""The planner output of spec 000 (§Planner Output Schema): a strict operation set.

``contracts/schemas/planner-operations.v1.json`` is generated from these types
(``python -m contracts.schemas``) and a test checks it against the spec's schema.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import msgspec

ID_PATTERN = r"^[a-zA-Z0-9_.:-]{1,128}$"
# msgspec checks patterns with re.search, where "$" also matches before a trailing
# newline; the spec means JSON Schema (ECMA) semantics, so ids are re-checked in full.
_ID_RE = re.compile(r"[a-zA-Z0-9_.:-]{1,128}")

OperationId = Annotated[str, msgspec.Meta(pattern=ID_PATTERN)]
SafetyLevel = Literal["read_only", "safe_write", "destructive"]
SAFETY_ORDER: dict[str, int] = {"read_only": 0, "safe_write": 1, "destructive": 2}


class Operation(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One node of the OperationGraph: a call of a registered bridge tool."""

    operation_id: Annotated[
        OperationId,
        msgspec.Meta(
            description="Stable unique identifier for this operation within request scope."
        ),
    ]
    tool_name: Annotated[
        str, msgspec.Meta(min_length=1, description="Registered MCP tool identifier.")
    ]
    args: Annotated[
        dict[str, Any],
        msgspec.Meta(
            description="Tool-specific argument payload validated against tool contract at runtime."
        ),
    ]
    depends_on: Annotated[
        list[OperationId],
        msgspec.Meta(
            description="List of prerequisite operation_ids that must complete successfully.",
            extra_json_schema={"uniqueItems": True},
        ),
    ]
    safety_level: Annotated[
        SafetyLevel, msgspec.Meta(description="Safety class used by policy gates and approvals.")
    ]

    def __post_init__(self) -> None:
        for value in (self.operation_id, *self.depends_on):
            if not _ID_RE.fullmatch(value):
                raise ValueError(f"operation id {value!r} must match {ID_PATTERN}")
        if len(set(self.depends_on)) != len(self.depends_on):
            raise ValueError(f"depends_on of {self.operation_id!r} has duplicate items")


class OperationSet(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A whole plan: the request it answers and its operations (spec 000)."""

    request_id: Annotated[
        str, msgspec.Meta(min_length=1, description="Unique Gemini request correlation id.")
    ]
    operations: Annotated[list[Operation], msgspec.Meta(min_length=1)]


def decode_operation_set(data: bytes | str) -> OperationSet:
    """Decode JSON text into an OperationSet, raising ``msgspec.ValidationError`` or, for
    text that is not JSON (or is nested too deeply to decode), ``msgspec.DecodeError``."""
    try:
        return msgspec.json.decode(data, type=OperationSet)
    except RecursionError:
        raise msgspec.DecodeError("JSON is malformed: nested too deeply to decode") from None


def convert_operation_set(obj: Any) -> OperationSet:
    """Convert already-parsed JSON (dicts and lists) into an OperationSet."""
    return msgspec.convert(obj, type=OperationSet)
