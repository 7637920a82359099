"""The operation set as a model writes it: the structured-output schema and its decoding.

Gemini's structured output drops or refuses free-form objects (``args`` is one: an object
whose keys depend on the tool), so the model writes each operation's arguments as a JSON
string, ``args_json``; ``decode_answer`` turns that back into the spec 000 operation set,
which ``graph.validate`` then checks like any other plan (docs/adr/0003).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import msgspec

from contracts.failures import failure
from contracts.operations import ID_PATTERN, OperationSet
from contracts.schema_gen import planner_operations_schema
from contracts.tools import ToolCatalog
from services.planner.graph import PlanInvalid

ARGS_FIELD = "args_json"
# The JSON Schema keywords Gemini's response_json_schema honours (and that we need).
_SUPPORTED = {
    "type",
    "description",
    "properties",
    "required",
    "items",
    "enum",
    "minItems",
    "maxItems",
    "additionalProperties",
    "propertyOrdering",
}
_ORDER = ["operation_id", "tool_name", ARGS_FIELD, "depends_on", "safety_level"]


def response_schema(catalog: ToolCatalog) -> dict[str, Any]:
    """The spec 000 schema reduced to what structured output accepts, ``args`` as a string.

    Also narrows ``tool_name`` to the registered tools. Keywords the model cannot be held
    to (``pattern``, ``uniqueItems``, ``minLength``) move into descriptions; the planner
    checks them all anyway.
    """
    schema = copy.deepcopy(planner_operations_schema())
    op = schema["properties"]["operations"]["items"]
    props = op["properties"]
    props["operation_id"]["description"] += f" Must match {ID_PATTERN}."
    props["depends_on"]["description"] += " No duplicates; never the operation's own id."
    props["tool_name"]["enum"] = catalog.names
    props["safety_level"]["type"] = "string"
    props.pop("args")
    props[ARGS_FIELD] = {
        "type": "string",
        "description": "The tool's arguments: one JSON object, written as a string, that "
        'matches the tool\'s input schema, e.g. {"name": "Box"}.',
    }
    op["properties"] = {name: props[name] for name in _ORDER}
    op["required"] = list(_ORDER)
    op["propertyOrdering"] = list(_ORDER)
    schema["propertyOrdering"] = ["request_id", "operations"]
    return _only_supported(schema)


def _only_supported(node: Any) -> Any:
    if isinstance(node, list):
        return [_only_supported(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "properties":
            out[key] = {name: _only_supported(sub) for name, sub in value.items()}
        elif key in _SUPPORTED:
            out[key] = _only_supported(value)
    return out


def decode_answer(text: str, request_id: str) -> dict[str, Any]:
    """The model's answer as a raw spec 000 operation set, for ``graph.validate``.

    Raises ``PlanInvalid`` (SCHEMA_INVALID) when the answer is not JSON or an
    ``args_json`` is not a JSON object. ``request_id`` is the run's own correlation id,
    whatever the model wrote.
    """
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise _malformed(f"the answer is not valid JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise _malformed("the answer is not a JSON object")
    operations = raw.get("operations")
    if isinstance(operations, list):
        raw["operations"] = [_with_args(op) for op in operations]
    raw["request_id"] = request_id
    return raw


def _with_args(op: Any) -> Any:
    if not isinstance(op, dict) or ARGS_FIELD not in op:
        return op  # the schema check names what is missing
    op = dict(op)
    encoded = op.pop(ARGS_FIELD)
    where = f"{ARGS_FIELD} of operation {op.get('operation_id')!r}"
    if not isinstance(encoded, str):
        raise _malformed(f"{where} is not a string")
    try:
        args = json.loads(encoded) if encoded.strip() else {}
    except ValueError as exc:
        raise _malformed(f"{where} is not valid JSON ({exc})") from None
    if not isinstance(args, dict):
        raise _malformed(f"{where} is not a JSON object")
    if "args" in op:
        raise _malformed(f"operation {op.get('operation_id')!r} has both args and {ARGS_FIELD}")
    op["args"] = args
    return op


def _malformed(problem: str) -> PlanInvalid:
    return PlanInvalid(
        failure(
            "SCHEMA_INVALID",
            f"Answer with one JSON object that matches the operation-set schema, each "
            f"operation's arguments a JSON object in {ARGS_FIELD}: {problem}",
        ),
        f"the model's answer is malformed: {problem}",
    )


def encode_answer(operation_set: OperationSet) -> str:
    """An operation set written the way the model writes it (for repair prompts)."""
    ops = [
        {
            "operation_id": op.operation_id,
            "tool_name": op.tool_name,
            ARGS_FIELD: json.dumps(op.args, separators=(",", ":")),
            "depends_on": op.depends_on,
            "safety_level": op.safety_level,
        }
        for op in operation_set.operations
    ]
    body = {"request_id": operation_set.request_id, "operations": ops}
    return msgspec.json.encode(body).decode()
