"""The ``rules`` planner backend: an offline, deterministic English grammar (docs/grammar.md).

``plan_request`` reads a request clause by clause; every clause becomes exactly one
operation, in sentence order. Anything the grammar cannot read is refused with
``UnreadableRequest`` quoting the first unreadable clause: this backend never guesses.
"""

from __future__ import annotations

from typing import Any

from contracts.operations import Operation, OperationSet
from contracts.tools import ToolCatalog
from services.planner.backends.rules_cursor import NoParse
from services.planner.backends.rules_grammar import parse_clause
from services.planner.backends.rules_lexer import Clause, split_clauses

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
    if tool.startswith("object."):
        return [args[key] for key in ("name", "new_name") if key in args]
    if "object" in args:
        return [args["object"]]
    return []


def plan_request(text: str, request_id: str, catalog: ToolCatalog) -> OperationSet:
    """Turn an English request into an operation set, or raise ``UnreadableRequest``.

    Pure: the same text and catalog always give the same operations, byte for byte.
    """
    if not text.strip():
        raise _refuse(text, "The request is empty: there is nothing to read.")
    clauses = split_clauses(text)
    if not clauses:
        raise _refuse(text, f'I could not find an instruction in "{text.strip()}".')

    width = max(2, len(str(len(clauses))))
    operations: list[Operation] = []
    last_touch: dict[str, int] = {}  # object name -> index of the last op that touched it
    it_name: str | None = None
    for index, clause in enumerate(clauses):
        try:
            tool, args = parse_clause(clause.tokens, it_name)
        except NoParse as exc:
            raise _unreadable(clause.text, exc.reason or _hint(clauses, index)) from None
        spec = catalog.get(tool)
        if spec is None:
            raise _refuse(
                clause.text,
                f'I could not plan "{clause.text}": the tool "{tool}" it needs is not '
                "available in the tool catalog.",
            )
        names = _object_names(tool, args)
        earlier = [last_touch[name] for name in names if name in last_touch]
        depends_on = [operations[max(earlier)].operation_id] if earlier else []
        operations.append(
            Operation(
                operation_id=f"op{index + 1:0{width}d}",
                tool_name=tool,
                args=args,
                depends_on=depends_on,
                safety_level=spec.safety_level,
            )
        )
        for name in names:
            last_touch[name] = index
        if tool == "object.create":
            it_name = args.get("name")  # an unnamed object cannot be referred to as "it"
        elif names:
            it_name = names[-1]
    return OperationSet(request_id=request_id, operations=operations)
