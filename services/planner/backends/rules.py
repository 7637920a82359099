"""The ``rules`` planner backend: an offline, deterministic English grammar (docs/grammar.md).

``plan_request`` reads a request clause by clause; every clause becomes one operation, in
sentence order, except a Geometry Nodes clause, which is a NODE_TREE step (spec 004)
compiled into a chain of ``gn.*`` operations. Anything the grammar cannot read is refused with
``UnreadableRequest`` quoting the first unreadable clause: this backend never guesses.
"""

from __future__ import annotations

from typing import Any

import msgspec

from contracts.geonodes import GeoNodeResponse, NodeTreePayload, NodeTreeStep, operation_id
from contracts.nodes import NodeCatalog
from contracts.operations import Operation, OperationSet
from contracts.tools import ToolCatalog
from services.planner.backends.rules_cursor import NoParse
from services.planner.backends.rules_geonodes import NODE_TREE, tree_objects
from services.planner.backends.rules_grammar import parse_clause
from services.planner.backends.rules_lexer import Clause, split_clauses
from services.planner.geonodes import step_calls
from services.planner.geonodes_check import check_response

GRAMMAR_SUMMARY = """\
Grammar (full reference: docs/grammar.md). Clauses are separated by , ; . "and" "then".
Words are case-insensitive; "a", "an", "the" are optional. Names: Box, Cube.001, "My Box";
"it" is the object of the previous clause. Vectors: 0 0 1 or (0, 0, 1).
Colors: red green blue yellow orange purple pink white black gray cyan magenta brown,
#rrggbb, or three numbers 0..1.
  add a <primitive> [named <Name>] [at <vec>] [rotated <vec> degrees] [scaled <n>|<vec>]
      primitives: cube, uv sphere, ico sphere, cylinder, cone, plane, torus, monkey
  move <Name> to|by <vec>         rotate <Name> to|by <vec> [degrees]
  scale <Name> to|by <n>|<vec>     rename <Name> to <New>         delete <Name>
  add a <modifier> modifier [named <M>] to <Name> [with <param> <value> ...]
      modifiers: bevel, subdivision, array, mirror, solidify, wireframe, decimate, displace,
      smooth, triangulate, weld, screw, remesh, cast, simple deform, wave, edge split,
      weighted normal.  Params are space-separated: with width 0.2 segments 3 (or width=0.2)
  bevel|subdivide <Name> [with <param> <value> ...]     remove the <M> modifier from <Name>
  set <param> of <M> on <Name> to <value>     set <Name> <M> <param> to <value>
  set <M> on <Name> with <param> <value> ...
  color <Name> <color>     make <Name> <color>     make <Name> metallic [<x>]
  set the color|metallic|roughness of <Name> to <value>
  give <Name> a material [with] [color <color>] [metallic <x>] [roughness <x>]
  snapshot | describe the scene | show the scene
  scatter <n> <Name> on <Surface>     add an array of <n> <Name> along x|y|z [spaced <d>]
Example: add a cube named Box at 0 0 1, add a bevel modifier to Box, then color Box red"""


class UnreadableRequest(Exception):
    """The request has a part the grammar cannot read."""

    def __init__(self, unread: str, message: str) -> None:
        super().__init__(message)
        self.unread = unread  # the exact unread text, as the user typed it
        self.message = message  # quotes the unread part, then shows GRAMMAR_SUMMARY

    def __str__(self) -> str:
        return self.message


def _refuse(unread: str, lead: str) -> UnreadableRequest:
    return UnreadableRequest(unread, f"{lead}\n\n{GRAMMAR_SUMMARY}")


def _unreadable(clause: str, reason: str) -> UnreadableRequest:
    lead = f'I could not read "{clause}".'
    return _refuse(clause, f"{lead} {reason}" if reason else lead)


def _hint(clauses: list[Clause], index: int) -> str:
    """A hint for the common slip of writing a vector with commas but no parentheses."""
    following = clauses[index + 1].tokens[0] if index + 1 < len(clauses) else None
    if following is not None and following.kind == "NUMBER":
        return "A comma outside parentheses ends a clause: write vectors as 1 2 3 or (1, 2, 3)."
    return ""


def _object_names(tool: str, args: dict[str, Any]) -> list[str]:
    """The object names an operation touches, in the order they appear in its args."""
    if tool == NODE_TREE:
        return tree_objects(args)
    if tool.startswith("object."):
        return [args[key] for key in ("name", "new_name") if key in args]
    if "object" in args:
        return [args["object"]]
    return []


def _calls(
    op_id: str, text: str, tool: str, args: dict[str, Any], nodes: NodeCatalog | None
) -> list[tuple[str, str, dict[str, Any]]]:
    """The (operation id, tool, args) of one clause: one call, or a NODE_TREE step's calls
    with ids ``<op id>.01``, ... (checked against the node catalog when there is one)."""
    if tool != NODE_TREE:
        return [(op_id, tool, args)]
    step = NodeTreeStep(id=op_id, description=text, payload=msgspec.convert(args, NodeTreePayload))
    if nodes is not None:
        check_response(
            GeoNodeResponse(version="1.0", steps=[step], done=True, final_message=text), nodes
        )
    calls = step_calls(step)
    return [(operation_id(op_id, i, len(calls)), t, a) for i, (t, a) in enumerate(calls, 1)]


def plan_request(
    text: str, request_id: str, catalog: ToolCatalog, nodes: NodeCatalog | None = None
) -> OperationSet:
    """Turn an English request into an operation set, or raise ``UnreadableRequest``.

    Pure: the same text and catalogs always give the same operations, byte for byte. A
    Geometry Nodes clause is checked against ``nodes`` (``PlanInvalid`` when its tree
    cannot run there).
    """
    if not text.strip():
        raise _refuse(text, "The request is empty: there is nothing to read.")
    clauses = split_clauses(text)
    if not clauses:
        raise _refuse(text, f'I could not find an instruction in "{text.strip()}".')

    width = max(2, len(str(len(clauses))))
    operations: list[Operation] = []
    last_touch: dict[str, int] = {}  # object name -> position of the last op touching it
    it_name: str | None = None
    for index, clause in enumerate(clauses):
        try:
            tool, args = parse_clause(clause.tokens, it_name)
        except NoParse as exc:
            raise _unreadable(clause.text, exc.reason or _hint(clauses, index)) from None
        op_id = f"op{index + 1:0{width}d}"
        calls = _calls(op_id, clause.text, tool, args, nodes)
        names = _object_names(tool, args)
        earlier = [last_touch[name] for name in names if name in last_touch]
        depends_on = [operations[max(earlier)].operation_id] if earlier else []
        for call_id, call_tool, call_args in calls:
            spec = catalog.get(call_tool)
            if spec is None:
                raise _refuse(
                    clause.text,
                    f'I could not plan "{clause.text}": the tool "{call_tool}" it needs is not '
                    "available in the tool catalog.",
                )
            operations.append(
                Operation(
                    operation_id=call_id,
                    tool_name=call_tool,
                    args=call_args,
                    depends_on=depends_on,
                    safety_level=spec.safety_level,
                )
            )
            depends_on = [call_id]  # a clause's own operations run as a chain
        for name in names:
            last_touch[name] = len(operations) - 1
        if tool == "object.create":
            it_name = args.get("name")  # an unnamed object cannot be referred to as "it"
        elif names:
            it_name = names[-1]
    return OperationSet(request_id=request_id, operations=operations)
