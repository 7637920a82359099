"""``POST /api/runs/{runId}/rerun``, ``/fork`` and ``POST /api/replays``: steering the
caller's own runs (issue 42, ADR 0063; docs/http-api.md). Each re-run or fork is a new
run through the planner and the policy; the HTTP door never pre-approves, so a fork's
revert waits for a person as any destructive operation does."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends
from pydantic import BeforeValidator, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from contracts.limits import LimitExceeded
from contracts.origins import MAX_OPERATION_INDEX
from contracts.receipts import RunResult
from contracts.session import HTTP
from services.doors.core.steer_client import Replayed, ReplayFilter, Steering
from services.doors.core.steering import MAX_REPLAY, NoRun, SteerInvalid, SteerRefused
from services.doors.gateway.agent import answer, followed, settled
from services.doors.gateway.auth import current_user
from services.doors.gateway.context import Gateway, gateway
from services.doors.gateway.errors import (
    Conflict,
    NotFound,
    TooLarge,
    ValidationError,
    responses,
)
from services.doors.gateway.reads import RunId
from services.doors.gateway.schemas import RunResponse, _Model

router = APIRouter(tags=["runs"])
User = Annotated[str, Depends(current_user)]
Gw = Annotated[Gateway, Depends(gateway)]
ERRORS = (400, 401, 404, 409, 413, 422, 503, 504)


def _whole(value: Any) -> Any:
    """JSON's 3.0 is the integer 3 (JSON Schema says so too); 3.5 and "3" stay refused."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


WholeNumber = Annotated[int, BeforeValidator(_whole)]


class _Strict(_Model):
    # No coercion: 0 is not false and "2" is not an operation, as the schema says.
    model_config = ConfigDict(**_Model.model_config, strict=True)


class RerunBody(_Strict):
    from_op: WholeNumber = Field(
        ge=1, le=MAX_OPERATION_INDEX, description="1 for the first operation."
    )
    plan: dict[str, Any] | SkipJsonSchema[None] = Field(
        default=None, description="An edited operation set; operations before fromOp unchanged."
    )


class ForkBody(_Strict):
    from_op: WholeNumber = Field(
        default=1,
        ge=1,
        le=MAX_OPERATION_INDEX,
        description="Start from the revision this operation met; 1: the run's parent.",
    )
    plan: dict[str, Any] | SkipJsonSchema[None] = Field(
        default=None, description="An edited operation set instead of the run's own."
    )


class ReplayBody(_Strict):
    since: float | None = Field(default=None, description="Created at or after (epoch s).")
    until: float | None = Field(default=None, description="Created at or before (epoch s).")
    status: Literal["completed", "failed"] | None = None
    error_code: str | None = Field(default=None, min_length=1, max_length=64)
    limit: WholeNumber = Field(default=10, ge=1, le=MAX_REPLAY)
    dry_run: bool = Field(default=False, description="List what would run; run nothing.")


class ReplayOperation(_Model):
    operation_id: str
    verdict: Literal["committed", "runs again"]
    status: str | None = None


class ReplayedRun(_Model):
    run_id: str
    refused: str | None = None
    rerun_id: str | None = None
    status: str | None = None
    operations: list[ReplayOperation] = []


class ReplayResponse(_Model):
    dry_run: bool
    runs: list[ReplayedRun]


def _steering(gw: Gateway) -> Steering:
    return Steering(gw.bus, gw.settings, HTTP)


async def _steered(made: Any) -> Any:
    """The request a steering move builds, its refusals mapped to one status each."""
    try:
        return await made
    except NoRun as exc:
        raise NotFound(str(exc)) from None
    except SteerInvalid as exc:
        raise ValidationError(str(exc)) from None
    except SteerRefused as exc:
        raise Conflict(str(exc)) from None
    except LimitExceeded as exc:
        raise TooLarge(str(exc)) from None
    except ValueError as exc:
        raise ValidationError(str(exc)) from None


@router.post("/api/runs/{runId}/rerun", response_model=RunResponse, responses=responses(*ERRORS))
async def rerun(run_id: RunId, body: RerunBody, user: User, gw: Gw) -> RunResponse:
    """Run the caller's failed or completed run again from operation ``fromOp``, under its
    request id: what it committed answers ``skipped_idempotent``. 409 when the scene moved
    on since (fork instead) or the run was cancelled or has not ended."""
    request, _ = await _steered(_steering(gw).rerun(run_id, user, body.from_op, body.plan))
    return await answer(gw, followed(gw, request), request.run_id)


@router.post("/api/runs/{runId}/fork", response_model=RunResponse, responses=responses(*ERRORS))
async def fork(run_id: RunId, user: User, gw: Gw, body: ForkBody | None = None) -> RunResponse:
    """A new run of the run's plan (or ``plan``) on the revision the run started from: its
    first operation, ``fork.base``, reverts the scene there and asks for approval."""
    plan, from_op = (body.plan, body.from_op) if body else (None, 1)
    request, _ = await _steered(_steering(gw).fork(run_id, user, plan, from_op=from_op))
    return await answer(gw, followed(gw, request), request.run_id)


# Not under /api/runs/: a path there is a run's id to GET.
@router.post("/api/replays", response_model=ReplayResponse, responses=responses(*ERRORS))
async def replay(body: ReplayBody, user: User, gw: Gw) -> ReplayResponse:
    """Re-run from their first operation the caller's runs the filter selects, oldest
    first, one after another; ``dryRun`` says what would run again and what is committed."""
    chosen = ReplayFilter(
        since=body.since,
        until=body.until,
        status=body.status,
        error_code=body.error_code,
        limit=body.limit,
    )
    items: list[Replayed] = await _steered(_steering(gw).replay(user, chosen))
    results: dict[str, RunResult] = {}
    if not body.dry_run:
        for item in items:
            if item.request is not None:
                view = await settled(gw, followed(gw, item.request), item.request.run_id)
                results[item.run_id] = view.result
    return ReplayResponse(
        dry_run=body.dry_run, runs=[_row(i, results.get(i.run_id)) for i in items]
    )


def _row(item: Replayed, result: RunResult | None) -> ReplayedRun:
    if item.steered is None:
        return ReplayedRun(run_id=item.run_id, refused=item.refused)
    statuses = {r.operation_id: r.status for r in result.receipts} if result else {}
    return ReplayedRun(
        run_id=item.run_id,
        rerun_id=item.request.run_id if item.request else None,
        status=result.status if result else None,
        operations=[
            ReplayOperation(operation_id=op_id, verdict=verdict, status=statuses.get(op_id))
            for op_id, verdict in item.steered.verdicts.items()
        ],
    )
