"""``GET /api/runs``, ``/api/runs/{runId}`` and its ``/audit``: the audit service's views;
``/api/runs/{runId}/operations``: the run's own events."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Annotated, TypeVar

from fastapi import APIRouter, Depends, Path

from contracts.queries import MAX_RUNS, RunDetail, RunRow
from services.audit import client as audit
from services.doors.gateway.auth import current_user
from services.doors.gateway.context import Gateway, gateway
from services.doors.gateway.errors import NotFound, Unavailable, responses
from services.doors.gateway.scene_schemas import RanOperation, RunOperations
from services.doors.gateway.schemas import (
    AuditResponse,
    RunList,
    audit_out,
    summary_out,
    timeline_out,
)
from services.doors.gateway.timeline_schemas import RunDetailResponse, account_out

router = APIRouter(prefix="/api/runs", tags=["runs"])
User = Annotated[str, Depends(current_user)]
Gw = Annotated[Gateway, Depends(gateway)]
RunId = Annotated[str, Path(alias="runId", pattern=r"^[A-Za-z0-9_-]{1,128}$")]
_T = TypeVar("_T")


async def ask(query: Awaitable[_T]) -> _T:
    """An audit query; its failures are the mesh's, never the caller's (503)."""
    try:
        return await query
    except audit.AuditClientError:
        raise Unavailable("the audit service could not answer; retry when it is up") from None


async def own_rows(gw: Gateway, user: str) -> list[RunRow]:
    """The caller's newest MAX_RUNS runs, newest first."""
    return await ask(audit.query_runs(gw.bus.nc, gw.prefix, limit=MAX_RUNS, user=user))


async def own_detail(gw: Gateway, run_id: str, user: str) -> RunDetail:
    await gw.own_run(run_id, user)
    return await ask(audit.query_run(gw.bus.nc, gw.prefix, run_id))


@router.get("", response_model=RunList, responses=responses(401, 503))
async def runs(user: User, gw: Gw) -> RunList:
    """The caller's runs, newest first."""
    return RunList(runs=[summary_out(row) for row in await own_rows(gw, user)])


@router.get("/{runId}", response_model=RunDetailResponse, responses=responses(401, 404, 422, 503))
async def run_detail(run_id: RunId, user: User, gw: Gw) -> RunDetailResponse:
    """One run and its timeline, in log order, laid out: operations, gates, revision,
    versions (as ``blendmesh runs show`` prints it)."""
    detail = await own_detail(gw, run_id, user)
    return RunDetailResponse(
        run=summary_out(detail.run),
        timeline=[timeline_out(t) for t in detail.timeline],
        **account_out(detail),
    )


@router.get("/{runId}/audit", response_model=AuditResponse, responses=responses(401, 404, 422, 503))
async def run_audit(run_id: RunId, user: User, gw: Gw) -> AuditResponse:
    """The run's spec 000 audit records, one per executed operation."""
    detail = await own_detail(gw, run_id, user)
    return AuditResponse(records=[audit_out(r) for r in detail.audit_records])


@router.get(
    "/{runId}/operations", response_model=RunOperations, responses=responses(401, 404, 422, 503)
)
async def run_operations(run_id: RunId, user: User, gw: Gw) -> RunOperations:
    """The operations of the run's last plan in order, with their arguments and what became
    of each: what the Blender add-on replays in the session that holds the scene."""
    requested = await gw.own_run(run_id, user)
    view = await gw.client.view(run_id)
    if view is None:
        raise NotFound(f"run {run_id} has no events yet; retry once it started")
    return RunOperations(
        run_id=run_id,
        scene_id=view.scene_id,
        prompt=requested.prompt,
        status=view.status,
        committed=view.committed,
        scene_hash=view.scene_hash,
        operations=[
            RanOperation(
                operation_id=step.operation_id,
                tool=step.operation.tool_name,
                args=dict(step.operation.args),
                state=step.state,
            )
            for step in view.steps
        ],
    )
