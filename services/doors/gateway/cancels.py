"""``POST /api/runs/{runId}/cancel``: stop a run of the caller's (docs/http-api.md)."""

from __future__ import annotations

import time
from typing import Annotated

from fastapi import APIRouter, Body, Depends
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from services.doors.core.cancels import MAX_REASON, NoSuchRun, RunOver, cancel_of
from services.doors.gateway.agent import answer
from services.doors.gateway.auth import current_user
from services.doors.gateway.context import Gateway, gateway
from services.doors.gateway.errors import Conflict, NotFound, responses
from services.doors.gateway.reads import RunId
from services.doors.gateway.schemas import RunResponse
from services.runtime.nats.history import read_run

router = APIRouter(prefix="/api/runs", tags=["runs"])
User = Annotated[str, Depends(current_user)]
Gw = Annotated[Gateway, Depends(gateway)]


class CancelBody(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    reason: str = Field(default="", max_length=MAX_REASON, description="Why, for the log.")


@router.post(
    "/{runId}/cancel",
    response_model=RunResponse,
    responses=responses(400, 401, 404, 409, 413, 422, 503, 504),
)
async def cancel(
    run_id: RunId, user: User, gw: Gw, body: Annotated[CancelBody | None, Body()] = None
) -> RunResponse:
    """Cancel the run; answers once it ended. A run being planned or waiting for approval
    fails at once; an executing one after the operation in hand, rolled back whole. Either
    way it fails ``RUN_CANCELLED`` and the scene stays at the revision it started from. A
    run that ended already is 409; cancelling twice answers the first cancel's outcome."""
    await gw.own_run(run_id, user)  # another user's run is 404, like an unknown one
    events = await read_run(gw.bus.js, gw.prefix, run_id)
    try:
        asked = cancel_of(events, user, body.reason if body else "", time.time())
    except NoSuchRun:
        raise NotFound(f"no run {run_id}") from None
    except RunOver as exc:
        raise Conflict(str(exc)) from None
    return await answer(gw, gw.client.cancel(asked, timeout=gw.run_timeout), run_id)
