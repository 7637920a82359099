"""What a plan and an event may hold, with messages that name the limit and what to do.

A plan is checked where it enters (the gateway, ``blendmesh run --plan``) and again by
the planner, which trusts no door. The door must check before the plan is encoded into
an event: JSON has no NaN or infinity, so msgspec writes them as ``null`` and the planner
could no longer say which argument was wrong. Every walk here is iterative, so a hostile
plan nested thousands deep is measured, never recursed into.
"""

from __future__ import annotations

import math
import sys
from collections import deque
from collections.abc import Iterator
from typing import Any

from contracts.errors import BlendmeshError
from contracts.geonodes import MAX_OPS_PER_STEP, MAX_STEPS, is_geonode_response

DEFAULT_MAX_OPERATIONS = 500  # BLENDMESH_MAX_OPERATIONS: one run's receipts fit one event
# Blender bridges one executor keeps at most (BLENDMESH_BRIDGES, ADR 0070): each is a
# process of ~280 MB idle, and past a few the runs share cores anyway.
MAX_BRIDGES = 8
MAX_DEPTH = 32  # tool arguments nest a few levels; nothing a tool reads goes deeper
# NATS refuses a message over max_payload (1 MiB by default, headers included): an event
# is checked against this before it is published, with room left for the headers.
MAX_EVENT_BYTES = 1_000_000
_FLOAT_MAX = sys.float_info.max


class RequestRefused(BlendmeshError, ValueError):
    """A request that must not enter the mesh; the message names what is wrong and where."""


class LimitExceeded(RequestRefused):
    """Larger than blendmesh accepts; the message names the limit and what to do."""


# Line breaks and tabs are text in source code, and only there (a Python step's ``code``).
CODE_ARGUMENT = "code"
_CODE_WHITESPACE = frozenset("\n\r\t")


def _control(text: str, allowed: frozenset[str] = frozenset()) -> str | None:
    """The first control character of ``text`` as ``U+XXXX``; None when it has none."""
    for char in text:
        if (char < " " or "\x7f" <= char <= "\x9f") and char not in allowed:
            return f"U+{ord(char):04X}"
    return None


def _walk(value: Any, where: str) -> Iterator[tuple[str, Any, int]]:
    """Every (path, value, depth) below ``value``, breadth first, without recursion."""
    queue: deque[tuple[str, Any, int]] = deque([(where, value, 0)])
    while queue:
        path, item, depth = queue.popleft()
        yield path, item, depth
        if isinstance(item, dict):
            queue.extend((f"{path}.{key}", v, depth + 1) for key, v in item.items())
        elif isinstance(item, list | tuple):
            queue.extend((f"{path}[{i}]", v, depth + 1) for i, v in enumerate(item))


def _depth_problem(value: Any, limit: int) -> int | None:
    """The depth ``value`` reaches when it is deeper than ``limit``, else None."""
    for _, _, depth in _walk(value, ""):
        if depth > limit:
            return depth
    return None


def argument_problem(args: Any) -> str | None:
    """Why an operation's args can never run, naming the argument; None when they can.

    Numbers must be finite and within the range of a double (a 400-digit integer has no
    float, and Blender reads every number as one); strings and keys must hold no control
    characters (Blender cuts a name at NUL and shows the rest), except line breaks and
    tabs in a top-level ``code`` argument (source code); nesting stops at
    ``MAX_DEPTH`` levels.
    """
    for path, value, depth in _walk(args, "args"):
        name = path.removeprefix("args.")
        if depth > MAX_DEPTH:
            top = name.split(".", 1)[0].split("[", 1)[0]
            return f"argument {top!r} is nested more than {MAX_DEPTH} levels deep"
        if isinstance(value, bool):
            continue
        if isinstance(value, float) and not math.isfinite(value):
            return f"argument {name!r} is not a finite number"
        if isinstance(value, int) and abs(value) > _FLOAT_MAX:
            return (
                f"argument {name!r} is too large a number (|value| must be below {_FLOAT_MAX:.3g})"
            )
        allowed = _CODE_WHITESPACE if name == CODE_ARGUMENT else frozenset()
        if isinstance(value, str) and (char := _control(value, allowed)):
            return f"argument {name!r} contains a control character ({char}); use printable text"
        if isinstance(value, dict):
            for key in value:
                if isinstance(key, str) and (char := _control(key)):
                    return f"argument {name!r} has a key with a control character ({char})"
    return None


def operations_problem(plan: Any, limit: int) -> str | None:
    """Why ``plan`` holds too many operations, naming the limit; None when it does not."""
    ops = plan.get("operations") if isinstance(plan, dict) else None
    if not isinstance(ops, list) or len(ops) <= limit:
        return None
    return (
        f"the plan has {len(ops)} operations, more than the {limit} one plan may hold "
        f"(BLENDMESH_MAX_OPERATIONS); split it into plans of at most {limit} operations "
        "and run them one after another"
    )


def nesting_problem(plan: Any) -> str | None:
    """Why ``plan`` is nested too deep to read; None when it is not.

    The operations' ``args`` are left out: ``argument_problem`` measures them and names
    the argument.
    """
    ops = plan.get("operations") if isinstance(plan, dict) else None
    if isinstance(ops, list):
        bare = [
            {k: v for k, v in op.items() if k != "args"} if isinstance(op, dict) else op
            for op in ops
        ]
        plan = {**plan, "operations": bare}
    if _depth_problem(plan, MAX_DEPTH) is None:
        return None
    return (
        f"the plan is nested more than {MAX_DEPTH} levels deep; an operation set (spec 000) "
        "is a list of flat operations"
    )


def geonode_problem(plan: Any, max_operations: int) -> str | None:
    """Why a spec 004 response holds too much to compile, naming the limit; None when it
    does not (its shape is the planner's to check)."""
    steps = plan.get("steps") if isinstance(plan, dict) else None
    if not isinstance(steps, list):
        return None
    if len(steps) > MAX_STEPS:
        return f"the response has {len(steps)} steps, more than the {MAX_STEPS} one may hold"
    total = 0
    for index, step in enumerate(steps):
        payload = step.get("payload") if isinstance(step, dict) else None
        ops = payload.get("operations", payload.get("ops")) if isinstance(payload, dict) else None
        if not isinstance(ops, list):
            continue
        if len(ops) > MAX_OPS_PER_STEP:
            return (
                f"step {step.get('id', index)} has {len(ops)} ops, more than the "
                f"{MAX_OPS_PER_STEP} one step may hold; split it into several steps"
            )
        total += len(ops) + 1  # a NODE_TREE step also ensures its target
    if total > max_operations:
        return (
            f"the response compiles to about {total} operations, more than the "
            f"{max_operations} one plan may hold (BLENDMESH_MAX_OPERATIONS); split it into "
            "several responses"
        )
    return None


def _check_geonode_response(plan: dict[str, Any], max_operations: int) -> None:
    """``check_plan`` for a 004 response: its size, and the values its ops send to Blender
    (a PYTHON step's code and the texts for people may hold newlines)."""
    problem = geonode_problem(plan, max_operations)
    if problem:
        raise LimitExceeded(problem)
    steps = plan.get("steps")
    for step in steps if isinstance(steps, list) else []:
        if isinstance(step, dict) and step.get("type") != "PYTHON" and "payload" in step:
            problem = argument_problem(step["payload"])
            if problem:
                raise RequestRefused(f"step {step.get('id')}: payload {problem}")
    if _depth_problem(plan, MAX_DEPTH) is not None:
        raise RequestRefused(f"the response is nested more than {MAX_DEPTH} levels deep")


def check_plan(plan: Any, max_operations: int) -> None:
    """Refuse a plan no service should see: ``LimitExceeded`` when it is too large,
    ``RequestRefused`` naming the operation and argument when it is unusable.

    What is not even shaped like a plan is left to the schema check of the planner. A
    spec 004 response (``contracts.geonodes``) is checked as one.
    """
    if is_geonode_response(plan):
        _check_geonode_response(plan, max_operations)
        return
    problem = operations_problem(plan, max_operations)
    if problem:
        raise LimitExceeded(problem)
    ops = plan.get("operations") if isinstance(plan, dict) else None
    for op in ops if isinstance(ops, list) else []:
        if isinstance(op, dict) and "args" in op:
            problem = argument_problem(op["args"])
            if problem:
                raise RequestRefused(f"operation {op.get('operation_id')}: {problem}")
    problem = nesting_problem(plan)
    if problem:
        raise RequestRefused(problem)
