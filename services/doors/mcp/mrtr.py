"""An approval on MCP 2026-07-28: a Multi Round-Trip Request instead of an elicitation.

A 2026-07-28 server sends the client no requests. When a run waits for a person and the
client declares form elicitation, the ``tools/call`` answers an ``InputRequiredResult``:
one form (the same question ``approval.py`` asks on 2025-11-25) and a ``requestState``
sealed by this server (``sealed.py``, purpose ``request-state``) naming the user, the
run, the approval, the request hash, the code hashes shown and the approval's expiry,
bound to the tool call it answered (its name and a digest of its arguments). The
client's retry of that call with the person's answer resolves the approval through the
mesh like every door's; a state that does not open for this caller on this call is
refused before anything reaches the run, which keeps waiting.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from typing import Any, Literal

import mcp.types as types

from contracts.errors import BlendmeshError
from contracts.resolutions import Resolution
from services.doors.core.run_view import Pending, RunView
from services.doors.mcp import answers
from services.doors.mcp.approval import APPROVE_SCHEMA, answer_run
from services.doors.mcp.asking import approval_page
from services.doors.mcp.cards import NotWaiting, resolve_sealed
from services.doors.mcp.door import Door
from services.doors.mcp.sealed import MAX_SEAL_CHARS, REQUEST_STATE, BadSeal, Sealed
from services.runtime.nats.retry import poll

INPUT_KEY = "approval"  # the one input request an approval asks
Mode = Literal["form", "url"]
# The state's purpose names the way it asked, under the MAC: an answer to the console's
# page ("I am done there") is never taken for an approval given in a form.
PURPOSES: dict[Mode, str] = {"form": REQUEST_STATE, "url": REQUEST_STATE + "-url"}
RUN_META = "blendmesh/run_id"  # in an InputRequiredResult's _meta: the run that waits
ANSWER_WAIT = 10.0  # seconds a retry from the console's page waits for the page's answer
MAX_RESPONSE_CHARS = 4096  # a yes or no with its form's one field; more is not an answer
REFUSED = (
    "requestState is not valid for you on this call (altered, expired, replayed onto "
    "another call, or another user's); nothing was approved and the run still waits: "
    "ask `run_status` for it and answer its approval in a new call or with the CLI"
)


class BadAnswer(BlendmeshError):
    """The retry's state or answer is unusable; ``str(exc)`` says why and what to do.
    The MCP spec's -32602 (invalid params) for the protocol field that was wrong."""


def request_digest(name: str, arguments: Mapping[str, Any] | None) -> str:
    """What a requestState is bound to: the tool and its arguments, canonically."""
    call = {"name": name, "arguments": dict(arguments or {})}
    text = json.dumps(call, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def asks_by_form(capabilities: Mapping[str, Any]) -> bool:
    """Whether the client declared form elicitation (no modes at all means forms)."""
    asks = capabilities.get("elicitation")
    if not isinstance(asks, Mapping):
        return False
    return "form" in asks or "url" not in asks


def mode_for(capabilities: Mapping[str, Any], console: str | None) -> Mode | None:
    """How to ask a 2026-07-28 client: a form where it declares forms, else the console's
    page where it opens URLs and the console's address is known; None: it cannot be asked."""
    if asks_by_form(capabilities):
        return "form"
    asks = capabilities.get("elicitation")
    if isinstance(asks, Mapping) and "url" in asks and console:
        return "url"
    return None


def input_required(
    door: Door,
    user: str,
    name: str,
    arguments: Mapping[str, Any],
    pending: Pending,
    mode: Mode = "form",
    console: str | None = None,
) -> dict[str, Any]:
    """The 2026-07-28 ``InputRequiredResult`` asking the person about ``pending``: by
    form, or (``url``) by the console's page for the run."""
    expires = pending.expires_at or time.time() + 3600
    sealed = Sealed(
        user=user,
        run_id=pending.run_id,
        approval_id=pending.approval_id,
        request_hash=pending.request_hash,
        code_sha256=tuple(pending.code_sha256),
        expires_at=expires,
    )
    state = door.sealer.seal(sealed, PURPOSES[mode], request_digest(name, arguments))
    if mode == "url" and console:
        asked: dict[str, Any] = {
            "mode": "url",
            "message": (
                f"blendmesh asks you to approve run {pending.run_id}: {pending.reason}. Open "
                "the console to see every operation and approve or reject it there."
            ),
            "url": approval_page(console, pending.run_id),
            "elicitationId": pending.approval_id,
        }
    else:
        asked = {
            "mode": "form",
            "message": answers.approval_question(pending),
            "requestedSchema": APPROVE_SCHEMA,
        }
    return {
        "resultType": "input_required",
        "inputRequests": {INPUT_KEY: {"method": "elicitation/create", "params": asked}},
        "requestState": state,
        "_meta": {RUN_META: pending.run_id},
    }


def opened(
    door: Door, user: str, name: str, arguments: Mapping[str, Any], state: Any, now: float
) -> tuple[Sealed, Mode]:
    """The approval a retry's ``requestState`` names and how it was asked, when this
    server sealed it for ``user`` on this very call; ``BadAnswer`` otherwise (one message
    for every way)."""
    if not isinstance(state, str) or len(state) > MAX_SEAL_CHARS:
        raise BadAnswer(REFUSED)
    bound = request_digest(name, arguments)
    for mode, purpose in PURPOSES.items():
        try:
            return door.sealer.open(state, user, now, purpose, bound), mode
        except BadSeal:
            continue
    raise BadAnswer(REFUSED)


def decision_of(responses: Any) -> Resolution:
    """The person's answer in ``inputResponses``: accept approves once; decline, cancel or
    an unchecked box rejects. Anything else is ``BadAnswer`` naming what to send."""
    answer = responses.get(INPUT_KEY) if isinstance(responses, Mapping) else None
    if not isinstance(answer, Mapping) or len(json.dumps(answer)) > MAX_RESPONSE_CHARS:
        raise BadAnswer(
            f"inputResponses.{INPUT_KEY} is missing or is not an elicitation result; retry "
            "the call with the requestState and the person's answer to the form asked"
        )
    action = answer.get("action")
    content = answer.get("content")
    if action not in ("accept", "decline", "cancel"):
        raise BadAnswer(f"inputResponses.{INPUT_KEY}.action must be accept, decline or cancel")
    if content is not None and not isinstance(content, Mapping):
        raise BadAnswer(f"inputResponses.{INPUT_KEY}.content must be an object")
    if action == "accept" and (content or {}).get("approve", True) is not False:
        return "approve_once"
    return "reject"


async def resume(
    door: Door, user: str, sealed: Sealed, decision: Resolution, mode: Mode = "form"
) -> tuple[types.CallToolResult, Pending | None]:
    """Follow the sealed approval with the person's answer; the run's answer, and the
    approval it waits on now, if any. A form's answer resolves it; the console's page
    was answered there (``accept``: the person is done), so the run is read, and while
    the same approval still waits it is asked again. Declining either rejects the run."""
    if mode == "form" or decision == "reject":
        ended = await resolve_sealed(door, user, sealed, decision)
    else:
        await door.own_run(sealed.run_id, user)

        async def look() -> RunView | None:
            return await door.client.view(sealed.run_id)

        def answered(view: RunView | None) -> bool:
            waiting = view.pending if view is not None else None
            return waiting is None or waiting.approval_id != sealed.approval_id

        # "Done" may reach here a moment before the page's answer reaches the log.
        view = await poll(look, answered, ANSWER_WAIT, pause=0.25, longest=1.0)
        if view is None:
            raise NotWaiting(f"run {sealed.run_id} cannot be read; `run_status` shows it later")
        waiting = view.pending
        if waiting is not None and waiting.approval_id == sealed.approval_id:
            return await answer_run(door, user, view, None, False), waiting
        if view.status not in ("completed", "failed") and waiting is None:
            # Answered on the page and under way: follow it as a call that waited would.
            result = await door.client.follow(sealed.run_id, None, door.run_timeout)
            view = RunView.of_result(result)
        ended = view
    answer = await answer_run(door, user, ended, None, ended.committed)
    return answer, ended.pending if ended.status == "awaiting_confirmation" else None
