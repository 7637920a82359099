"""``/api/agent/approvals/pending`` and ``/resolve`` (spec 002 §7), over the run's events."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Depends

from contracts.fold import is_terminal
from contracts.project_book import may_manage
from contracts.queries import MAX_RUNS, RunRow
from contracts.trusted_code import quote_problem
from services.audit import client as audit
from services.doors.core.client import CodeNotQuoted, RequestMismatch
from services.doors.gateway.agent import answer
from services.doors.gateway.auth import current_user
from services.doors.gateway.context import Gateway, gateway
from services.doors.gateway.errors import Conflict, NotFound, responses
from services.doors.gateway.reads import ask, own_rows
from services.doors.gateway.schemas import (
    PendingApproval,
    PendingApprovals,
    ResolveBody,
    RunResponse,
    pending_out,
    run_response,
)

router = APIRouter(prefix="/api/agent/approvals", tags=["approvals"])
User = Annotated[str, Depends(current_user)]
Gw = Annotated[Gateway, Depends(gateway)]
STALE = "requestHash does not match the pending request; read /api/agent/approvals/pending again"


async def _pending(gw: Gateway, row: RunRow) -> PendingApproval | None:
    view = await gw.client.view(row.run_id)
    waiting = view.pending if view is not None else None
    if waiting is None:
        return None
    return pending_out(waiting).model_copy(update={"user": row.user})


async def _waiting_for(gw: Gateway, user: str) -> list[RunRow]:
    """The runs of the artists of the projects ``user`` leads that wait on the projects'
    scenes: what waits for the lead. One query of the runs under way (the newest
    MAX_RUNS of the mesh), whatever the number of artists."""
    book = await gw.studio.book.current()
    led = [p for p in book.visible(user) if may_manage(p.members[user])]
    if not led:
        return []
    active = await ask(audit.query_runs(gw.bus.nc, gw.prefix, limit=MAX_RUNS, active=True))
    return [
        r
        for r in active
        if r.state == "awaiting_confirmation"
        and any(r.scene_id in p.scenes and p.members.get(r.user) == "artist" for p in led)
    ]


@router.get("/pending", response_model=PendingApprovals, responses=responses(401, 503))
async def pending(user: User, gw: Gw) -> PendingApprovals:
    """The approvals the caller's runs wait on, newest run first, then those of the
    artists of the projects the caller leads."""
    rows = [r for r in await own_rows(gw, user) if r.state == "awaiting_confirmation"]
    rows += await _waiting_for(gw, user)
    found = await asyncio.gather(*(_pending(gw, r) for r in rows))
    return PendingApprovals(approvals=[p for p in found if p is not None])


@router.post(
    "/resolve",
    response_model=RunResponse,
    responses=responses(400, 401, 404, 409, 413, 422, 503, 504),
)
async def resolve(body: ResolveBody, user: User, gw: Gw) -> RunResponse:
    """Approve or reject; answers once the run is completed or failed again.

    A resolution of an approval that is no longer pending changes nothing and answers the
    run's current state, so a client may safely retry.
    """
    asked = await gw.own_approval(body.approval_id, user)
    view = await gw.client.view(asked.run_id)
    if view is None:
        raise NotFound(f"no approval {body.approval_id}")
    current = view.pending
    if current is None and not is_terminal(view.result):
        # Resolved by a racing request a moment ago and under way: its outcome, as the
        # winner will answer it (eight racing clients all hear how the run ended).
        return await answer(gw, gw.client.resolved_view(asked.run_id, timeout=gw.run_timeout),
                            asked.run_id)  # fmt: skip
    if current is None or current.approval_id != body.approval_id:
        return run_response(view)  # no longer pending: the run as it stands
    if body.request_hash != current.quote:
        raise Conflict(STALE)
    # Trusted Python counts as approved only by a person who quotes its code's hash: refuse
    # here, before anything is published, rather than let the policy drop the resolution.
    problem = (
        None if body.decision == "reject" else quote_problem(current.operations, body.code_sha256)
    )
    if problem is not None:
        raise Conflict(problem)
    following = gw.client.resolve_view(
        asked.run_id,
        body.decision,
        user,
        timeout=gw.run_timeout,
        request_hash=body.request_hash if current.request_hash else None,
        code_sha256=body.code_sha256,
    )
    try:
        return await answer(gw, following, asked.run_id)
    except RequestMismatch:  # a newer request arrived between our read and the resolution
        raise Conflict(STALE) from None
    except CodeNotQuoted as exc:
        raise Conflict(str(exc)) from None
