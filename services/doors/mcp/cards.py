"""The approval card: an MCP Apps view (``io.modelcontextprotocol/ui``) of a run.

Hosts that render MCP Apps (Claude, Claude Desktop, VS Code, ChatGPT, Goose) show no
elicitation in several cases; they show this card instead. ``run`` and ``import_asset``
name it in their ``_meta.ui``, so the host draws it beside the result: the run's status,
and while it waits, every operation with its arguments and each trusted Python step's
code, with Approve and Reject. The card answers through ``answer_approval``, a tool only
apps may call, with the sealed approval (``sealed.py``) the result's ``_meta`` carries:
the model neither sees the seal nor can make one, so no tool call of the model approves.
"""

from __future__ import annotations

import time
from importlib.resources import files
from typing import Any

import mcp.types as types
from mcp.server.session import ServerSession

from contracts.resolutions import Resolution
from contracts.tool_answers import output_schema
from services.doors.core.run_view import Pending, RunView
from services.doors.mcp import answers
from services.doors.mcp.door import Door, check
from services.doors.mcp.errors import ToolError, ValidationError
from services.doors.mcp.sealed import BadSeal, Sealed
from services.doors.mcp.tools import _schema

UI_EXTENSION = "io.modelcontextprotocol/ui"
APP_MIME = "text/html;profile=mcp-app"
CARD_URI = "ui://blendmesh/approval-card.html"
SEAL_KEY = "blendmesh/approval"  # in a run result's _meta: the card's, not the model's
CARD_META: dict[str, Any] = {"ui": {"resourceUri": CARD_URI}}

CARD = types.Resource(
    uri=CARD_URI,  # type: ignore[arg-type]
    name="approval-card",
    title="Run and approval card",
    description="An MCP Apps view of a run: its status, and Approve / Reject while it waits.",
    mimeType=APP_MIME,
)

ANSWER_APPROVAL = types.Tool(
    name="answer_approval",
    title="Answer an approval (from its card)",
    description=(
        "Only the approval card calls this: it approves or rejects the approval its run "
        "result sealed for the person. A seal the card was not given is refused."
    ),
    inputSchema=_schema(
        {
            "approval": {"type": "string", "minLength": 1, "maxLength": 4096},
            "decision": {"type": "string", "enum": ["approve", "reject"]},
        },
        ["approval", "decision"],
    ),
    outputSchema=output_schema("answer_approval"),
    annotations=types.ToolAnnotations(
        readOnlyHint=False, destructiveHint=True, idempotentHint=False, openWorldHint=False
    ),
    _meta={"ui": {"resourceUri": CARD_URI, "visibility": ["app"]}},
)


CARDED = frozenset(
    {"run", "import_asset", "rerun_run", "fork_run"}
)  # the tools whose answer is a run to show


def carded(tool: types.Tool) -> types.Tool:
    """``tool`` naming the card, when its answer is a run the card shows."""
    if tool.name not in CARDED:
        return tool
    return tool.model_copy(update={"meta": {**(tool.meta or {}), **CARD_META}})


class NotWaiting(ToolError):
    type_name = "Conflict"


def card_html() -> str:
    return (files("services.doors.mcp") / "approval_card.html").read_text(encoding="utf-8")


def renders_apps(capabilities: types.ClientCapabilities | None) -> bool:
    """Whether the client declared MCP Apps with the card's MIME type (SEP-2133
    extensions: ``capabilities.extensions["io.modelcontextprotocol/ui"].mimeTypes``)."""
    extensions = (capabilities.model_extra or {}).get("extensions") if capabilities else None
    ui = extensions.get(UI_EXTENSION) if isinstance(extensions, dict) else None
    mimes = ui.get("mimeTypes") if isinstance(ui, dict) else None
    return isinstance(mimes, list) and APP_MIME in mimes


def session_renders_apps(session: ServerSession) -> bool:
    params = session.client_params
    return renders_apps(params.capabilities if params is not None else None)


def sealed_answer(
    door: Door, user: str, answer: types.CallToolResult, pending: Pending
) -> types.CallToolResult:
    """``answer`` of a run waiting on ``pending``, with the seal its card answers with and
    words telling the model that the person answers in the card."""
    expires = pending.expires_at or time.time() + 3600
    seal = door.sealer.seal(
        Sealed(
            user=user,
            run_id=pending.run_id,
            approval_id=pending.approval_id,
            request_hash=pending.request_hash,
            code_sha256=tuple(pending.code_sha256),
            expires_at=expires,
        )
    )
    said = "; the person approves or rejects it in the card shown with this result"
    content = [
        c.model_copy(update={"text": c.text + said}) if i == 0 and c.type == "text" else c
        for i, c in enumerate(answer.content)
    ]
    meta = {**(answer.meta or {}), SEAL_KEY: seal}
    return answer.model_copy(update={"content": content, "meta": meta})


async def answer_approval(door: Door, user: str, args: Any) -> types.CallToolResult:
    """The card's Approve or Reject: the sealed approval, answered once, as ``user``."""
    checked = check(args, ANSWER_APPROVAL.inputSchema)
    try:
        sealed = door.sealer.open(checked["approval"], user, time.time())
    except BadSeal as exc:
        raise ValidationError(str(exc)) from None
    decision: Resolution = "approve_once" if checked["decision"] == "approve" else "reject"
    ended = await resolve_sealed(door, user, sealed, decision)
    scene = await door.scene(ended.scene_id, user)
    return answers.run_answer(ended.result, ended.pending, scene, None)


async def resolve_sealed(door: Door, user: str, sealed: Sealed, decision: Resolution) -> RunView:
    """Answer the approval ``sealed`` names, once, as ``user``, through the mesh like every
    door (one ``approval_resolved`` the policy checks); the run as it then stands. A run
    that no longer waits on it (answered already, replayed, cancelled) is ``NotWaiting``."""
    await door.own_run(sealed.run_id, user)
    view = await door.client.view(sealed.run_id)
    waiting = view.pending if view is not None else None
    if view is None or waiting is None or waiting.approval_id != sealed.approval_id:
        status = view.status if view is not None else "unknown"
        raise NotWaiting(
            f"run {sealed.run_id} no longer waits on this approval (it is {status}); "
            "`run_status` shows where it is"
        )
    result = await door.client.resolve(
        sealed.run_id,
        decision,
        user,
        None,
        door.run_timeout,
        request_hash=sealed.request_hash,
        code_sha256=sealed.code_sha256,  # of the code the person was shown
    )
    return RunView.of_result(result)
