"""The operation set as a model writes it: the structured-output schema and its decoding.

Gemini's structured output drops or refuses free-form objects (``args`` is one: an object
whose keys depend on the tool), so the model writes each operation's arguments as a JSON
string, ``args_json``; ``decode_answer`` turns that back into the spec 000 operation set,
which ``graph.validate`` then checks like any other plan (docs/adr/0003).

Where the mesh has Geometry Nodes tools, the model may instead write a spec 004 response
as one JSON string, ``geonodes_json``, leaving ``operations`` empty; ``decode_answer``
returns that response for ``intake.accept`` to check and compile (docs/adr/0008).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import msgspec

from contracts.failures import failure
from contracts.geonodes import is_geonode_response
from contracts.operations import ID_PATTERN, OperationSet
from contracts.schema_gen import planner_operations_schema
from contracts.tools import ToolCatalog
from services.planner.graph import PlanInvalid, Reply

ARGS_FIELD = "args_json"
GEONODES_FIELD = "geonodes_json"
REPLY_FIELD = "reply"  # words instead of a plan (spec 002 §4.5: no tool call)
MAX_REPLY_CHARS = 4000  # a reply is a few sentences; a longer one is cut, never refused
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


def response_schema(catalog: ToolCatalog, geonodes: bool = False) -> dict[str, Any]:
    """The spec 000 schema reduced to what structured output accepts, ``args`` as a string.

    Also narrows ``tool_name`` to the registered tools. Keywords the model cannot be held
    to (``pattern``, ``uniqueItems``, ``minLength``) move into descriptions; the planner
    checks them all anyway. With ``geonodes``, the answer may be a spec 004 response in
    ``geonodes_json`` instead, so ``operations`` may be empty.
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
    _with_reply(schema)
    if geonodes:
        _with_geonodes(schema)
    return _only_supported(schema)


def _with_reply(schema: dict[str, Any]) -> None:
    """A question, or a request that needs no change, is answered in words: ``operations``
    may be empty then, and ``reply`` holds the answer."""
    schema["properties"]["operations"].pop("minItems", None)
    schema["properties"][REPLY_FIELD] = {
        "type": "string",
        "description": "Your answer to the person, in a few sentences, when the request is a "
        "question or needs no change to the scene; operations is empty then. Empty when "
        "operations hold the answer.",
    }
    schema["required"] = ["request_id"]
    schema["propertyOrdering"] = [*schema["propertyOrdering"], REPLY_FIELD]


def _with_geonodes(schema: dict[str, Any]) -> None:
    schema["properties"]["operations"].pop("minItems", None)
    schema["properties"]["operations"]["description"] = (
        "The operation set; leave it empty when geonodes_json holds the answer."
    )
    schema["properties"][GEONODES_FIELD] = {
        "type": "string",
        "description": "A Geometry Nodes response (spec 004: version, steps, done, "
        "final_message, meta) written as one JSON string; empty when operations hold the "
        "answer.",
    }
    schema["propertyOrdering"] = ["request_id", "operations", GEONODES_FIELD, REPLY_FIELD]


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


def decode_answer(text: str, request_id: str) -> dict[str, Any] | Reply:
    """The model's answer as a raw spec 000 operation set (or the spec 004 response of
    ``geonodes_json``), for ``intake.accept``; a ``Reply`` when it answers in words only.

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
    reply = raw.pop(REPLY_FIELD, None)
    if reply is not None and not isinstance(reply, str):
        raise _malformed(f"{REPLY_FIELD} is not a string")
    if reply and reply.strip():
        geonodes = raw.get(GEONODES_FIELD)
        also = geonodes.strip() if isinstance(geonodes, str) else geonodes is not None
        if raw.get("operations") or also:
            raise _malformed(f"the answer has both a plan and a {REPLY_FIELD}; give one")
        return Reply(reply.strip()[:MAX_REPLY_CHARS])
    geonodes = raw.pop(GEONODES_FIELD, None)
    if geonodes is not None and (not isinstance(geonodes, str) or geonodes.strip()):
        return _geonodes(geonodes, raw)
    operations = raw.get("operations")
    if isinstance(operations, list):
        raw["operations"] = [_with_args(op) for op in operations]
    raw["request_id"] = request_id
    return raw


def _geonodes(encoded: Any, rest: dict[str, Any]) -> dict[str, Any]:
    """The spec 004 response the answer holds in ``geonodes_json``."""
    if rest.get("operations"):
        raise _malformed(f"the answer has both operations and {GEONODES_FIELD}; give one")
    if not isinstance(encoded, str):
        raise _malformed(f"{GEONODES_FIELD} is not a string")
    try:
        response = json.loads(encoded)
    except ValueError as exc:
        raise _malformed(f"{GEONODES_FIELD} is not valid JSON ({exc})") from None
    except RecursionError:
        raise _malformed(f"{GEONODES_FIELD} is nested too deeply to read") from None
    if not is_geonode_response(response):
        raise _malformed(
            f"{GEONODES_FIELD} does not hold a Geometry Nodes response "
            "(an object with version, steps, done and final_message)"
        )
    assert isinstance(response, dict)
    return response


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
