"""The OperationGraph of spec 000: validation and the deterministic schedule.

Everything that can be known about a plan before it touches a scene is checked here, so
an invalid plan is rejected with the failure contract and nothing executes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
import networkx as nx
from jsonschema import Draft202012Validator

from contracts.errors import BlendmeshError
from contracts.failures import FailureContract, failure
from contracts.limits import (
    DEFAULT_MAX_OPERATIONS,
    argument_problem,
    nesting_problem,
    operations_problem,
)
from contracts.operations import SAFETY_ORDER, OperationSet, convert_operation_set
from contracts.tools import ToolCatalog


class PlanInvalid(BlendmeshError):
    """A plan that must not execute; carries the failure contract and a human message."""

    def __init__(self, contract: FailureContract, message: str) -> None:
        super().__init__(message)
        self.failure = contract
        self.message = message


@dataclass(frozen=True)
class ValidPlan:
    operation_set: OperationSet
    schedule: list[str]
    done: bool = True  # a 004 response's ``done``: False asks a model planner for more
    # A 004 response's ``meta.requires_gate_verification``; an operation set asks for none.
    requires_gate_verification: bool = False


@dataclass(frozen=True)
class Reply:
    """An answer with nothing to run: words for the person. A model's plain reply to a
    question (spec 002 §4.5, no tool call), or a spec 004 answer with no steps and ``done``
    (004 §1), whose ``final_message`` is the reply."""

    text: str


def validate(
    raw: Any, catalog: ToolCatalog, max_operations: int = DEFAULT_MAX_OPERATIONS
) -> ValidPlan:
    """Check size, schema, graph, tools, safety levels and arguments; return the schedule."""
    ops = _parse(loaded(raw), max_operations)
    graph = _graph(ops)
    _check_tools(ops, catalog)
    schedule = list(nx.lexicographical_topological_sort(graph))
    return ValidPlan(operation_set=ops, schedule=schedule)


def _schema_invalid(problem: str) -> PlanInvalid:
    return PlanInvalid(
        failure("SCHEMA_INVALID", f"Emit JSON matching planner-operations.v1: {problem}"),
        f"the plan does not match the operation-set schema: {problem}",
    )


def loaded(raw: Any) -> Any:
    """JSON text as Python values; anything else as it is."""
    if not isinstance(raw, bytes | str):
        return raw
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        raise _schema_invalid(str(exc)) from None
    except RecursionError:
        raise _schema_invalid("the JSON is nested too deeply to read") from None


def _parse(raw: Any, max_operations: int) -> OperationSet:
    # Size first: a plan over the limit is refused before any work proportional to it.
    too_many = operations_problem(raw, max_operations)
    if too_many:
        raise PlanInvalid(
            failure(
                "SCHEMA_INVALID",
                f"Send at most {max_operations} operations in one plan; split the work into "
                "several plans",
            ),
            too_many,
        )
    too_deep = nesting_problem(raw)
    if too_deep:
        raise _schema_invalid(too_deep)
    try:
        return convert_operation_set(raw)
    except msgspec.ValidationError as exc:
        raise _schema_invalid(str(exc)) from None


def _graph(ops: OperationSet) -> nx.DiGraph:
    ids = [op.operation_id for op in ops.operations]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise PlanInvalid(
            failure(
                "GRAPH_DUPLICATE_OPERATION",
                f"Give each operation a unique operation_id; repeated: {', '.join(duplicates)}",
                repair=[(d, "replace_args") for d in duplicates],
            ),
            f"operation ids used more than once: {', '.join(duplicates)}",
        )
    graph: nx.DiGraph = nx.DiGraph()
    graph.add_nodes_from(ids)
    missing: list[tuple[str, str]] = []
    for op in ops.operations:
        for dep in op.depends_on:
            if dep not in graph:
                missing.append((op.operation_id, dep))
            else:
                graph.add_edge(dep, op.operation_id)
    if missing:
        text = ", ".join(f"{op} -> {dep}" for op, dep in missing)
        raise PlanInvalid(
            failure(
                "GRAPH_MISSING_DEPENDENCY",
                f"depends_on names operations that are not in the plan ({text}); "
                "add them or remove the reference",
                repair=[(op, "insert_precondition") for op, _ in missing],
            ),
            f"missing dependencies: {text}",
        )
    try:
        cycle = nx.find_cycle(graph)
    except nx.NetworkXNoCycle:
        return graph
    members = sorted({edge[0] for edge in cycle})
    raise PlanInvalid(
        failure(
            "GRAPH_CYCLE",
            f"depends_on forms a cycle through {' -> '.join(members)}; "
            "break it by removing one dependency",
            repair=[(members[-1], "drop")],
        ),
        f"the operations depend on each other in a cycle: {' -> '.join(members)}",
    )


def _check_tools(ops: OperationSet, catalog: ToolCatalog) -> None:
    for op in ops.operations:
        spec = catalog.get(op.tool_name)
        if spec is None:
            raise PlanInvalid(
                failure(
                    "TOOL_UNKNOWN",
                    f"Use only registered tools: {', '.join(catalog.names)}",
                    repair=[(op.operation_id, "replace_args")],
                ),
                f"operation {op.operation_id} calls {op.tool_name!r}, which is not a registered "
                f"tool; registered tools: {', '.join(catalog.names)}",
            )
        unusable = argument_problem(op.args)
        if unusable:
            raise PlanInvalid(
                failure(
                    "ARGS_INVALID",
                    f"Fix args of {op.operation_id} for {op.tool_name}: {unusable}",
                    repair=[(op.operation_id, "replace_args")],
                ),
                f"operation {op.operation_id} ({op.tool_name}) has an unusable argument: "
                f"{unusable}",
            )
        if SAFETY_ORDER[op.safety_level] < SAFETY_ORDER[spec.safety_level]:
            raise PlanInvalid(
                failure(
                    "SAFETY_LEVEL_MISMATCH",
                    f"{op.tool_name} is {spec.safety_level}; declare at least that level",
                    repair=[(op.operation_id, "replace_args")],
                ),
                f"operation {op.operation_id} declares {op.safety_level} but {op.tool_name} "
                f"is {spec.safety_level}",
            )
        errors = sorted(
            Draft202012Validator(spec.input_schema).iter_errors(op.args), key=lambda e: e.path
        )
        if errors:
            where = "/".join(str(p) for p in errors[0].absolute_path) or "args"
            raise PlanInvalid(
                failure(
                    "ARGS_INVALID",
                    f"Fix args of {op.operation_id} for {op.tool_name}: {where}: "
                    f"{errors[0].message}",
                    repair=[(op.operation_id, "replace_args")],
                ),
                f"operation {op.operation_id} ({op.tool_name}) has invalid args at {where}: "
                f"{errors[0].message}",
            )
