"""What a model planner is told: built here, from data only (no I/O).

The model gets exactly this: system instructions (persona and policy), the tool catalog,
the thread's recent messages, a summary of the target scene, the request, and on a repair
its earlier answers with their failure contracts. docs/gemini.md lists the
same, so a user can see everything that leaves the machine.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from contracts import tool_categories as found
from contracts.events import ThreadMessage
from contracts.focus import Focus
from contracts.nodes import NodeCatalog
from contracts.operations import ID_PATTERN
from contracts.scenes import SceneSummary
from contracts.tools import ToolCatalog
from services.planner.model.answer import ARGS_FIELD, response_schema
from services.planner.model.port import ModelRequest, Role, Turn
from services.planner.model.prompt_geonodes import GEONODES_RULES, node_section

HISTORY_LIMIT = 20  # thread messages sent with each request

PERSONA = """\
You are the planner of blendmesh. You turn a person's request about a Blender scene into \
one operation set: a JSON object that blendmesh validates, checks against its safety \
policy and then applies to a headless Blender scene, one registered tool call per \
operation. You never run code: your answer is the operation set, or, when the request \
is a question or needs no change to the scene, a short reply to the person in words."""

POLICY = f"""\
Rules:
1. Use only the registered tools listed below, with arguments that match each tool's \
input_schema. Nothing else can change the scene.
2. Name only objects, modifiers and materials that are in the scene summary or that an \
earlier operation of the same plan creates. Never invent names of things that exist.
3. Give every operation a unique operation_id matching {ID_PATTERN} (op01, op02, ...).
4. List in depends_on the operation_ids that must succeed first, e.g. a modifier on an \
object the plan creates depends on the operation that creates it. Name only operations of \
this plan, and never form a cycle.
5. Set safety_level to the tool's declared safety_level. Destructive operations (such as \
object.delete) wait for a person's approval before they run: use them only when the \
request asks for them.
6. Write each operation's arguments as one JSON object encoded in the string field \
{ARGS_FIELD}, for example "{{\\"name\\": \\"Box\\"}}".
7. Set request_id to the request id given with the request.
8. If the request is a question that the scene summary answers, or needs no change to the \
scene, leave operations empty and write your answer to the person in reply. If answering \
needs a fresh look at the scene, answer with a single scene.snapshot.
If blendmesh rejected or failed your previous answer, you get its failure contract \
(error_code, retry_hint, minimal_repair_plan): answer with a complete, corrected \
operation set."""


@dataclass(frozen=True)
class PlanContext:
    """What one run asks for, read from its RunRequested."""

    run_id: str
    request_id: str
    scene_id: str
    prompt: str
    focus: Focus | None = None  # what the person had selected in Blender


def system_instructions(
    catalog: ToolCatalog, nodes: NodeCatalog | None = None, request: str = ""
) -> str:
    """Persona, policy and the tool catalog; with a node catalog, also the Geometry Nodes
    response and the nodes relevant to ``request``."""
    text = f"{PERSONA}\n\n{POLICY}\n\n{catalog_section(catalog, request)}"
    if nodes is None:
        return text
    return f"{text}\n\n{GEONODES_RULES}\n\n{node_section(nodes, request)}"


def catalog_section(catalog: ToolCatalog, request: str = "") -> str:
    """The tools with their schemas: with ``request``, only the core set and the
    categories its words call for (``contracts/tool_categories.py``), the others by name,
    so a prompt does not pay for a hundred schemas; without one, every tool."""
    wanted = found.needed(request) if request else None
    shown = [
        t
        for t in catalog.tools
        if wanted is None or t.name in found.CORE or found.category_of(t.name) in wanted
    ]
    tools = [
        {
            "name": t.name,
            "description": t.description,
            "safety_level": t.safety_level,
            "input_schema": t.input_schema,
        }
        for t in shown
    ]
    text = (
        f"Registered tools (catalog {catalog.version}, Blender {catalog.blender_version}):\n"
        + "\n".join(_compact(tool) for tool in tools)
    )
    others = sorted(set(catalog.names) - {t.name for t in shown})
    if others:
        text += (
            "\nAlso registered, their schemas left out as this request's words do not call "
            f"for them: {', '.join(others)}"
        )
    return text


def scene_section(scene_id: str, summary: SceneSummary | None) -> str:
    if summary is None or not (summary.objects or summary.materials):
        return f"Scene {scene_id!r} is empty."
    body = msgspec.to_builtins(summary)
    body.pop("scene_hash", None)
    return f"Scene {scene_id!r} now (summary): {_compact(body)}"


def request_turn(context: PlanContext, summary: SceneSummary | None) -> str:
    return (
        f"{scene_section(context.scene_id, summary)}\n\n"
        f"{focus_section(context.focus)}"
        f"Request id: {context.request_id}\n"
        f"Request: {context.prompt}"
    )


def focus_section(focus: Focus | None) -> str:
    """The person's selection, for "it", "this" and "the selected ones"; "" without one.
    The names are data (JSON), never instructions."""
    if focus is None:
        return ""
    said = {"active": focus.active, "selected": list(focus.selected)}
    return (
        'Selected in the person\'s Blender when they asked ("it" and "this" mean the '
        f'active object, "the selected ones" the selected): {_compact(said)}\n\n'
    )


def history_turns(messages: Sequence[ThreadMessage], run_id: str) -> list[Turn]:
    """The thread's earlier messages as conversation turns (this run's own left out)."""
    earlier = [m for m in messages if m.run_id != run_id][-HISTORY_LIMIT:]
    turns: list[Turn] = []
    for message in earlier:
        role: Role = "user" if message.role == "user" else "model"
        turns.append(Turn(role, message.text))
    while turns and turns[0].role != "user":
        turns.pop(0)  # a conversation starts with the user
    return turns


def build_request(
    context: PlanContext,
    catalog: ToolCatalog,
    summary: SceneSummary | None,
    history: Sequence[ThreadMessage],
    repairs: Sequence[Turn] = (),
    nodes: NodeCatalog | None = None,
) -> ModelRequest:
    """The whole model call: instructions, history, the request, then any repair turns.

    ``nodes`` is the node catalog where the mesh has Geometry Nodes tools: then the model
    may answer with a spec 004 response.
    """
    turns = [
        *history_turns(history, context.run_id),
        Turn("user", request_turn(context, summary)),
        *repairs,
    ]
    return ModelRequest(
        system=system_instructions(catalog, nodes, context.prompt),
        contents=tuple(_merged(turns)),
        response_schema=response_schema(catalog, geonodes=nodes is not None),
    )


def _merged(turns: Sequence[Turn]) -> list[Turn]:
    """Join consecutive turns of one role: the API expects the roles to alternate."""
    out: list[Turn] = []
    for turn in turns:
        if out and out[-1].role == turn.role:
            out[-1] = Turn(turn.role, f"{out[-1].text}\n\n{turn.text}")
        else:
            out.append(turn)
    return out


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
