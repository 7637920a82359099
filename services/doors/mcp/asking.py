"""How a run's approval reaches its person, chosen from what the MCP client declares.

In order: the approval card where the host renders MCP Apps (``cards.py``: the call
answers at once and the person answers in the card); a form elicitation where it asks
with forms (an ``elicitation`` capability without modes means forms, as before modes
existed); a URL elicitation opening the web console on the run's approval where it only
opens URLs and the console's address is known; else the answer names the CLI command.
"""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import quote

from mcp.server.session import ServerSession
from mcp.shared.context import RequestContext

from contracts.receipts import RunResult
from contracts.resolutions import Resolution
from services.doors.core.client import ClientError, OnEvent, RunTimedOut
from services.doors.core.run_view import Pending, RunView
from services.doors.mcp.cards import renders_apps
from services.doors.mcp.door import Door
from services.doors.mcp.errors import Timeout, Unavailable
from services.runtime.nats.retry import poll

Context = RequestContext[Any, Any, Any]
Ask = Literal["card", "form", "url", "command"]
CONSOLE_VAR = "BLENDMESH_CONSOLE_URL"  # where `blendmesh mcp` (stdio) sends URL-mode asks


def how_to_ask(session: ServerSession, console: str | None) -> Ask:
    params = session.client_params
    capabilities = params.capabilities if params is not None else None
    if renders_apps(capabilities):
        return "card"
    asks = capabilities.elicitation if capabilities is not None else None
    if asks is not None and (asks.form is not None or asks.url is None):
        return "form"
    if asks is not None and asks.url is not None and console:
        return "url"
    return "command"


def console_of(door: Door, ctx: Context) -> str | None:
    """The web console's address: the gateway this /mcp request came to, or on stdio
    BLENDMESH_CONSOLE_URL; None when neither is known."""
    request = ctx.request
    if request is not None and hasattr(request, "base_url"):
        return str(request.base_url).rstrip("/")
    configured = door.settings.env.get(CONSOLE_VAR, "").strip().rstrip("/")
    return configured or None


async def resolve_asked(
    door: Door, user: str, pending: Pending, decision: Resolution, on_event: OnEvent | None
) -> RunResult:
    """Answer ``pending`` with the person's ``decision`` and follow the run. A run that
    ended while the person was asked (cancelled, or answered at another door and
    finished) answers as it ended: their answer came too late to change it."""
    try:
        return await door.client.resolve(
            pending.run_id, decision, user, on_event, door.run_timeout,
            request_hash=pending.request_hash, code_sha256=pending.code_sha256,
        )  # fmt: skip
    except RunTimedOut:
        raise
    except ClientError:
        view = await door.client.view(pending.run_id)
        if view is None or view.status not in ("completed", "failed"):
            raise
        return view.result


def approval_page(console: str, run_id: str) -> str:
    return f"{console}/?run={quote(run_id, safe='')}"


async def ask_by_url(
    door: Door, user: str, ctx: Context, pending: Pending, console: str, on_event: OnEvent | None
) -> RunResult:
    """Open the console's page for ``pending``; follow the run once the person answered
    there (or reject it when they will not open it), then tell the host it is done."""
    url = approval_page(console, pending.run_id)
    message = (
        f"blendmesh asks you to approve run {pending.run_id}: {pending.reason}. Open the "
        "console to see every operation and approve or reject it there."
    )
    opened = await ctx.session.elicit_url(
        message, url, pending.approval_id, related_request_id=ctx.request_id
    )
    if opened.action != "accept":
        return await resolve_asked(door, user, pending, "reject", on_event)

    async def look() -> RunView | None:
        return await door.client.view(pending.run_id)

    def settled(view: RunView | None) -> bool:
        """Answered there, and the run has ended or waits on another approval since."""
        if view is None:
            return False
        waiting = view.pending
        if waiting is not None:
            return waiting.approval_id != pending.approval_id
        return view.status in ("completed", "failed")

    # The run's events are read again, not followed: the page's answer is not this door's
    # to publish, and following from here would meet the approval it just left.
    view = await poll(look, settled, door.run_timeout, pause=0.25, longest=1.0)
    if view is None:  # the run was there a moment ago: the mesh lost it, or its view
        raise Unavailable(f"run {pending.run_id} cannot be read now; ask `run_status` later")
    if not settled(view):  # asked once: a page left open is not asked about again
        raise Timeout(
            f"run {pending.run_id} has no answer within {door.run_timeout:g} s; it still "
            f"waits: approve it on {url}, or `{pending.approve_command}`"
        )
    await ctx.session.send_elicit_complete(pending.approval_id, related_request_id=ctx.request_id)
    return view.result
