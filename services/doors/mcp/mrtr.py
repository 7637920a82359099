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
from typing import Any

import mcp.types as types

from contracts.resolutions import Resolution
from services.doors.core.run_view import Pending
from services.doors.mcp import answers
from services.doors.mcp.approval import APPROVE_SCHEMA, answer_run
from services.doors.mcp.cards import resolve_sealed
from services.doors.mcp.door import Door
from services.doors.mcp.sealed import MAX_SEAL_CHARS, REQUEST_STATE, BadSeal, Sealed

INPUT_KEY = "approval"  # the one input request an approval asks
RUN_META = "blendmesh/run_id"  # in an InputRequiredResult's _meta: the run that waits
MAX_RESPONSE_CHARS = 4096  # a yes or no with its form's one field; more is not an answer
REFUSED = (
    "requestState is not valid for you on this call (altered, expired, replayed onto "
    "another call, or another user's); nothing was approved and the run still waits: "
    "ask `run_status` for it and answer its approval in a new call or with the CLI"
)


class BadAnswer(Exception):
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


def input_required(
    door: Door, user: str, name: str, arguments: Mapping[str, Any], pending: Pending
) -> dict[str, Any]:
    """The 2026-07-28 ``InputRequiredResult`` asking the person about ``pending``."""
    expires = pending.expires_at or time.time() + 3600
    sealed = Sealed(
        user=user,
        run_id=pending.run_id,
        approval_id=pending.approval_id,
        request_hash=pending.request_hash,
        code_sha256=tuple(pending.code_sha256),
        expires_at=expires,
    )
    state = door.sealer.seal(sealed, REQUEST_STATE, request_digest(name, arguments))
    form = {
        "mode": "form",
        "message": answers.approval_question(pending),
        "requestedSchema": APPROVE_SCHEMA,
    }
    return {
        "resultType": "input_required",
        "inputRequests": {INPUT_KEY: {"method": "elicitation/create", "params": form}},
        "requestState": state,
        "_meta": {RUN_META: pending.run_id},
    }


def opened(
    door: Door, user: str, name: str, arguments: Mapping[str, Any], state: Any, now: float
) -> Sealed:
    """The approval a retry's ``requestState`` names, when this server sealed it for
    ``user`` on this very call; ``BadAnswer`` otherwise (one message for every way)."""
    if not isinstance(state, str) or len(state) > MAX_SEAL_CHARS:
        raise BadAnswer(REFUSED)
    try:
        return door.sealer.open(state, user, now, REQUEST_STATE, request_digest(name, arguments))
    except BadSeal:
        raise BadAnswer(REFUSED) from None


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
    door: Door, user: str, sealed: Sealed, decision: Resolution
) -> tuple[types.CallToolResult, Pending | None]:
    """Resolve the sealed approval with the person's decision and follow the run; its
    answer, and the approval it waits on next (after a repair), if any."""
    ended = await resolve_sealed(door, user, sealed, decision)
    answer = await answer_run(door, user, ended, None, ended.committed)
    waiting = ended.pending if ended.status == "awaiting_confirmation" else None
    return answer, waiting
