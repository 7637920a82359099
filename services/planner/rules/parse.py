"""The ``rules`` planner backend: an offline, deterministic English grammar (docs/grammar.md).

``plan_request`` reads a request clause by clause; a clause becomes its operations in
sentence order ("three cubes" is three), and a Geometry Nodes clause is a NODE_TREE step
(spec 004) compiled into a chain of ``gn.*`` operations. Given the scene's summary, group
words ("everything", "all cubes") become the scene's objects and unknown names are refused
with the closest one. Anything else is refused with ``UnreadableRequest`` pointing at the
first word not understood: this backend never guesses.
"""

from __future__ import annotations

from typing import Any

import msgspec

from contracts.exports import EXPORT_TOOL
from contracts.focus import Focus
from contracts.geonodes import GeoNodeResponse, NodeTreePayload, NodeTreeStep, operation_id
from contracts.nodes import NodeCatalog
from contracts.operations import Operation, OperationSet
from contracts.scenes import SceneSummary
from contracts.tools import ToolCatalog
from services.planner.geonodes.check import check_response
from services.planner.geonodes.compile import step_calls
from services.planner.rules import refusal
from services.planner.rules.cursor import NoParse, Plan
from services.planner.rules.geonodes import NODE_TREE
from services.planner.rules.grammar import NoTool, parse_clause, starts_clause
from services.planner.rules.lexer import Clause, split_clauses
from services.planner.rules.names import referred, touched
from services.planner.rules.refusal import GRAMMAR_SUMMARY, UnreadableRequest
from services.planner.rules.scene import Stage
from services.planner.rules.thread import EarlierRun, is_again, it_after, last_copy, them_after

AFTER_ALL = frozenset({EXPORT_TOOL})  # tools that read the scene every earlier step made

__all__ = ["GRAMMAR_SUMMARY", "EarlierRun", "UnreadableRequest", "plan_request"]


def _hint(clauses: list[Clause], index: int) -> str:
    """A hint for the common slip of writing a vector with commas but no parentheses."""
    following = clauses[index + 1].tokens[0] if index + 1 < len(clauses) else None
    if following is not None and following.kind == "NUMBER":
        return "A comma outside parentheses ends a clause: write vectors as 1 2 3 or (1, 2, 3)."
    return ""


def _read(
    clause: Clause, clauses: list[Clause], index: int, it_name: str | None, stage: Stage
) -> list[Plan]:
    try:
        return parse_clause(clause.tokens, it_name, stage)
    except NoTool as exc:
        raise refusal.no_tool(clause, str(exc)) from None
    except NoParse as exc:
        reason = exc.reason or _hint(clauses, index)
        raise refusal.unreadable(clause, exc.reached, reason, exc.verb) from None


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
    text: str,
    request_id: str,
    catalog: ToolCatalog,
    nodes: NodeCatalog | None = None,
    scene: SceneSummary | None = None,
    earlier: EarlierRun | None = None,
    focus: Focus | None = None,
) -> OperationSet:
    """Turn an English request into an operation set, or raise ``UnreadableRequest``.

    Pure: the same text, catalogs, scene summary and earlier run always give the same
    operations, byte for byte. ``scene`` is the summary of the scene the request is about,
    when known; ``earlier`` is the thread's previous run, which ``it``, ``the copy`` and
    ``again`` may refer to; ``focus`` is what the person had selected in Blender ("it" and
    "this" are its active object, "the selected ones" its selection). A Geometry Nodes
    clause is checked against ``nodes`` (``PlanInvalid`` when its tree cannot run there).
    """
    if not text.strip():
        raise UnreadableRequest(
            text, f"The request is empty: there is nothing to read.\n\n{GRAMMAR_SUMMARY}"
        )
    clauses = _clauses(text, earlier)
    if not clauses:
        raise UnreadableRequest(
            text, f'I could not find an instruction in "{text.strip()}".\n\n{GRAMMAR_SUMMARY}'
        )

    stage = Stage(scene)
    planned: list[tuple[Clause, list[Plan]]] = []
    it_name: str | None = None
    if earlier is not None:
        it_name = it_after(earlier.plans, earlier.it)
        stage.them = them_after(earlier.plans, [])
        stage.last_copy = last_copy(earlier.plans) or earlier.copy
    if focus is not None:  # what the person sees selected beats what the thread made
        it_name = focus.active or it_name
        stage.selected = list(focus.selected)
    for index, clause in enumerate(clauses):
        try:
            plans = _read(clause, clauses, index, it_name, stage)
            for tool, args in plans:
                for name in referred(tool, args):
                    if stage.known and not stage.exists(name):
                        raise refusal.unknown_object(clause, name, stage.suggest(name))
                stage.apply(tool, args)
        except UnreadableRequest as exc:
            raise refusal.with_rest(exc, clauses, index) from None
        planned.append((clause, plans))
        it_name = it_after(plans, it_name)
        stage.them = them_after(plans, stage.them)
    if not any(plans for _, plans in planned):
        raise UnreadableRequest(text, f'"{text.strip()}" asks for no change.\n\n{GRAMMAR_SUMMARY}')
    return OperationSet(request_id=request_id, operations=_operations(planned, catalog, nodes))


def _clauses(text: str, earlier: EarlierRun | None) -> list[Clause]:
    """The request's clauses, ``again`` standing for the previous run's request."""
    clauses: list[Clause] = []
    for clause in split_clauses(text, starts_clause):
        if not is_again(clause):
            clauses.append(clause)
            continue
        before = split_clauses(earlier.text, starts_clause) if earlier is not None else []
        if not before or any(is_again(c) for c in before):
            raise UnreadableRequest(
                clause.text,
                f'"{clause.text}" repeats the request before it in this thread, and there is '
                "none to repeat here; say what to do (add a cube, make it red).",
            )
        clauses.extend(before)
    return clauses


def _operations(
    planned: list[tuple[Clause, list[Plan]]], catalog: ToolCatalog, nodes: NodeCatalog | None
) -> list[Operation]:
    """Number the plans op01, op02, ... and chain each to the latest that touched its names."""
    count = sum(len(plans) for _, plans in planned)
    width = max(2, len(str(count)))
    operations: list[Operation] = []
    last_touch: dict[str, int] = {}  # name -> position of the last op touching it
    number = 0
    for clause, plans in planned:
        for tool, args in plans:
            number += 1
            op_id = f"op{number:0{width}d}"
            names = touched(tool, args)
            earlier = [last_touch[name] for name in names if name in last_touch]
            depends_on = [operations[max(earlier)].operation_id] if earlier else []
            if tool in AFTER_ALL:  # reads the whole scene: after everything said before it
                depends_on = [op.operation_id for op in operations]
            for call_id, call_tool, call_args in _calls(op_id, clause.text, tool, args, nodes):
                spec = catalog.get(call_tool)
                if spec is None:
                    raise refusal.missing_tool(clause, call_tool)
                operations.append(
                    Operation(
                        operation_id=call_id,
                        tool_name=call_tool,
                        args=call_args,
                        depends_on=depends_on,
                        safety_level=spec.safety_level,
                    )
                )
                depends_on = [call_id]  # a step's own operations run as a chain
            for name in names:
                last_touch[name] = len(operations) - 1
    return operations
