"""The ``run`` tool: submit a run, report its progress, and let the person decide.

When the run waits for approval, the person is asked as the host allows (``asking.py``):
an approval card beside the answer (MCP Apps), a form elicitation showing every pending
operation with its arguments, or the web console's page by URL elicitation; the answer is
published as an ``approval_resolved`` event like any other door's. A host that can do
none gets the approval and the CLI command; the run waits for a person. The model never
approves. Cancelling the tool call ends the wait, not the run: ``cancel_run`` ends it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import mcp.types as types
from mcp.shared.context import RequestContext

from contracts.events import AnyEvent, RunRequested
from contracts.progress import progress_line
from contracts.receipts import RunResult
from contracts.resolutions import Resolution
from services.doors.core.client import ClientError, OnEvent
from services.doors.core.requests import build_request
from services.doors.core.run_view import RunView
from services.doors.mcp import answers, asking, cards
from services.doors.mcp.door import Door
from services.doors.mcp.errors import Timeout, ValidationError
from services.planner.client import planner_for

Context = RequestContext[Any, Any, Any]
MAX_QUESTIONS = 5  # a run asks again only after a repair; a loop would be the host's bug
APPROVE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {
            "type": "boolean",
            "title": "Run these operations",
            "description": "Leave checked to run them once; uncheck or decline to reject.",
            "default": True,
        }
    },
}


@contextlib.asynccontextmanager
async def progress(ctx: Context) -> AsyncIterator[OnEvent | None]:
    """An ``on_event`` that sends each progress line as a progress notification, when the
    request carries a progress token; None otherwise."""
    token = ctx.meta.progressToken if ctx.meta is not None else None
    if token is None:
        yield None
        return
    queue: asyncio.Queue[str | None] = asyncio.Queue()

    def on_event(event: AnyEvent) -> None:
        line = progress_line(event)
        if line is not None:
            queue.put_nowait(line.text.strip())

    async def pump() -> None:
        sent = 0
        while (text := await queue.get()) is not None:
            sent += 1
            with contextlib.suppress(Exception):  # a host gone away is not the run's failure
                await ctx.session.send_progress_notification(
                    token, sent, None, text, related_request_id=str(ctx.request_id)
                )

    task = asyncio.create_task(pump())
    try:
        yield on_event
    finally:
        queue.put_nowait(None)  # the last lines go out before the answer
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(task), 5)
        finally:
            task.cancel()


async def ask_person(ctx: Context, question: str) -> Resolution:
    """The person's answer through the host: accept approves once, anything else rejects."""
    answer = await ctx.session.elicit_form(
        question, APPROVE_SCHEMA, related_request_id=ctx.request_id
    )
    if answer.action == "accept" and (answer.content or {}).get("approve", True) is not False:
        return "approve_once"
    return "reject"


def run_request(door: Door, user: str, args: dict[str, Any]) -> RunRequested:
    """The request of a ``run`` call (its arguments checked against the tool's schema):
    from the door's host profile (spec 001), with the determinism it asks for."""
    try:
        return build_request(
            user=user,
            scene_id=args["scene_id"],
            prompt=args.get("request"),
            plan=args.get("plan"),
            planner=planner_for(door.settings),
            thread_id=args.get("thread_id"),
            rollback_boundary=args.get("rollback", "operation"),
            max_operations=door.settings.max_operations,
            host=door.host,
            determinism=args.get("determinism", "any"),
        )
    except ValueError as exc:  # LimitExceeded, RequestRefused: they name the argument
        raise ValidationError(str(exc)) from None


async def prepare(door: Door, user: str, args: dict[str, Any]) -> RunRequested:
    """The request a ``run`` call's checked arguments ask for, once they hold together
    (one of words or a plan; a thread the caller's own)."""
    prompt, plan = args.get("request"), args.get("plan")
    if (prompt is None) == (plan is None):
        raise ValidationError("give exactly one of `request` (words) or `plan` (JSON object)")
    if args.get("thread_id"):
        await door.check_thread(args["thread_id"], user)
    return run_request(door, user, args)


async def submit(door: Door, user: str, args: dict[str, Any], ctx: Context) -> types.CallToolResult:
    return await follow_request(door, user, await prepare(door, user, args), ctx)


async def follow_request(
    door: Door, user: str, request: RunRequested, ctx: Context
) -> types.CallToolResult:
    """Submit ``request`` and follow it, asking the person through the host when it
    waits for approval: how ``run``, ``rerun_run`` and ``fork_run`` answer."""
    console = asking.console_of(door, ctx)
    ask = asking.how_to_ask(ctx.session, console)
    before = await door.scene(request.scene_id, user)
    stale = await door.preview(request.scene_id, user) if before is not None else None
    try:
        async with progress(ctx) as on_event:
            result = await door.client.run(request, on_event, door.run_timeout)
            for _ in range(MAX_QUESTIONS):
                if result.status != "awaiting_confirmation" or ask not in ("form", "url"):
                    break
                result = await _decide(door, user, ctx, result, on_event, console, ask)
    except ClientError as exc:
        raise Timeout(
            f"run {request.run_id} has no answer within {door.run_timeout:g} s; it goes on "
            "in the mesh: ask `run_status` later"
        ) from exc
    view = RunView.of_result(result)
    committed = view.committed and (before is None or before["scene_hash"] != view.scene_hash)
    answer = await answer_run(door, user, view, stale if committed else None, committed)
    if ask == "card" and view.pending is not None:
        return cards.sealed_answer(door, user, answer, view.pending)
    return answer


async def _decide(
    door: Door,
    user: str,
    ctx: Context,
    result: RunResult,
    on_event: OnEvent | None,
    console: str | None,
    ask: asking.Ask,
) -> RunResult:
    """Ask the person about the approval ``result`` waits on (what its view shows), by
    form or by the console's page, and follow the run with their answer."""
    pending = RunView.of_result(result).pending
    if pending is None:
        return result
    if ask == "url" and console is not None:
        return await asking.ask_by_url(door, user, ctx, pending, console, on_event)
    decision = await ask_person(ctx, answers.approval_question(pending))
    # The resolution quotes the hashes of the code the question showed.
    return await asking.resolve_asked(door, user, pending, decision, on_event)


async def answer_run(
    door: Door, user: str, view: RunView, stale: bytes | None, committed: bool
) -> types.CallToolResult:
    """The ``run`` tool's answer to ``user``: the run, its scene and the scene's picture.
    ``committed``: the run made a new revision, whose picture replaces ``stale``."""
    scene = await door.scene(view.scene_id, user)
    preview = None
    if scene is not None and not committed:  # the scene is as it was: so is its picture
        preview = await door.preview(view.scene_id, user)
    elif scene is not None and view.result.renders_preview:  # of the new revision: wait
        preview = await door.fresh_preview(view.scene_id, user, stale)
    # Else no picture of the new revision will come (the mesh renders none): an older one
    # would show a scene that is no more, and waiting for one held every answer 5 s.
    return answers.run_answer(view.result, view.pending, scene, preview)
