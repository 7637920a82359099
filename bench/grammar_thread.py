"""The fresh request set of bench/grammar.py: one thread typed on one scene, in order.

bench/grammar_fresh*.txt hold requests written by people who had not read the grammar
(see its header). Each is planned against the real summary of the scene the requests
before it left, with the previous request as the thread's earlier run, then run on real
bpy: it counts as right on the first try when the plan holds the tools (and arguments)
its line expects and every operation succeeds, or when it is refused as "no tool does
this" and its line says ``!no_tool``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contracts.tools import ToolCatalog
from services.executor.adapters.bridge_client import BridgeProcess
from services.planner.rules import parse as rules

FRESH = Path(__file__).with_name("grammar_fresh.txt")
FRESH_SETS = tuple(
    Path(__file__).with_name(name)
    for name in (
        "grammar_fresh.txt",
        "grammar_fresh_b.txt",
        "grammar_fresh_c.txt",
        "grammar_fresh_d.txt",
    )
)
_STEP = re.compile(r"^(?:(\d+)\*)?([a-z_.]+|!no_tool)(?:\((.*)\))?$")


@dataclass(frozen=True)
class Expected:
    """One step a right plan holds: a tool and some of its arguments."""

    tool: str
    args: dict[str, str]


@dataclass(frozen=True)
class Fresh:
    text: str
    steps: tuple[Expected, ...]


def load(path: Path = FRESH) -> list[Fresh]:
    """The requests of ``path``: ``<request> => <tool>[(k=v,...)] ...``; # starts a comment."""
    found: list[Fresh] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        text, _, want = line.rpartition("=>")
        steps: list[Expected] = []
        for word in want.split():
            match = _STEP.match(word)
            if match is None:
                raise ValueError(f"cannot read {word!r} in {line!r}")
            times, tool, given = match.groups()
            args = dict(kv.split("=", 1) for kv in given.split(",")) if given else {}
            steps += [Expected(tool, args)] * int(times or 1)
        found.append(Fresh(text.strip(), tuple(steps)))
    return found


def _fits(ops: list[tuple[str, dict[str, Any]]], steps: tuple[Expected, ...]) -> bool:
    if [tool for tool, _ in ops] != [step.tool for step in steps]:
        return False
    return all(
        str(args.get(k)) == v
        for (_, args), step in zip(ops, steps, strict=True)
        for k, v in step.args.items()
    )


async def first_tries(
    bridge: BridgeProcess, catalog: ToolCatalog, requests: list[Fresh]
) -> list[tuple[Fresh, bool, str]]:
    """Each request of the thread, whether it was right on the first try, and what happened."""
    await bridge.reset()
    earlier: Any = None
    results: list[tuple[Fresh, bool, str]] = []
    for request in requests:
        scene = await bridge.summary("fresh")  # what a planner is given: bounds measured
        refusal = request.steps == (Expected("!no_tool", {}),)
        try:
            try:
                planned = rules.plan_request(request.text, "fresh", catalog, None, scene, earlier)
            except TypeError:  # a planner from before threads were read
                planned = rules.plan_request(request.text, "fresh", catalog, None, scene)
        except rules.UnreadableRequest as exc:
            results.append((request, refusal and exc.kind == "no_tool", exc.message))
            continue
        ops = [(op.tool_name, op.args) for op in planned.operations]
        if hasattr(rules, "EarlierRun"):
            first_run = rules.EarlierRun("", ())
            earlier = (earlier or first_run).then(request.text, ops)
        ran = True
        for tool, args in ops:
            ran = ran and (await bridge.call_tool(tool, args, mcp_call_id="fresh-op")).ok
        right = not refusal and ran and _fits(ops, request.steps)
        results.append((request, right, json.dumps(ops)))
    return results
