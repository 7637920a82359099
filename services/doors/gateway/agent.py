"""``POST /api/agent/run`` and its NDJSON twin ``/api/agent/run/stream`` (spec 002 §2)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from fastapi.responses import StreamingResponse
from nats.errors import Error as NatsError

from contracts.events import AnyEvent, RunRequested
from contracts.focus import Focus
from contracts.limits import LimitExceeded
from contracts.progress import progress_line
from contracts.session import HTTP
from services.doors.core.client import ClientError, OnEvent, RequestMismatch
from services.doors.core.requests import build_request
from services.doors.core.run_view import Gathered, RunView
from services.doors.gateway import exports
from services.doors.gateway.auth import current_user
from services.doors.gateway.context import Gateway, gateway
from services.doors.gateway.errors import (
    Timeout,
    TooLarge,
    Unavailable,
    ValidationError,
    classify,
    responses,
    status_of,
    type_name,
)
from services.doors.gateway.schemas import RunBody, RunResponse, run_response
from services.planner.client import planner_for

log = logging.getLogger("blendmesh.gateway")

router = APIRouter(prefix="/api/agent", tags=["agent"])
User = Annotated[str, Depends(current_user)]
Gw = Annotated[Gateway, Depends(gateway)]
RUN_ERRORS = (400, 401, 403, 404, 409, 413, 422, 503, 504)


class NDJSONResponse(StreamingResponse):
    media_type = "application/x-ndjson"


async def start(body: RunBody, user: str, gw: Gateway) -> RunRequested:
    """The RunRequested for ``body``, once the thread it continues is known to be the user's
    and the scene's exported file holds nothing a person would lose (``exports``): the
    import of that file instead when the caller chose to adopt it."""
    if body.thread_id is not None:
        await gw.own_thread(body.thread_id, user)
    # Another user's scene: 404 as an unknown one; a viewer's run, a locked scene: 403/409.
    await gw.studio.may_start(body.scene_id, user)
    request = _built(body, user, gw)  # a request that cannot be built changes no file
    adopted = await exports.guard(gw, user, body.scene_id, body.exported_file)
    return adopted if adopted is not None else request


def _built(body: RunBody, user: str, gw: Gateway) -> RunRequested:
    try:
        return build_request(
            user=user,
            scene_id=body.scene_id,
            prompt=body.prompt,
            plan=body.plan,
            planner=planner_for(gw.settings),
            thread_id=body.thread_id,
            rollback_boundary=body.rollback,
            max_operations=gw.settings.max_operations,
            host=HTTP,
            determinism=body.determinism,
            focus=None
            if body.focus is None
            else Focus(selected=tuple(body.focus.selected), active=body.focus.active),
        )
    except LimitExceeded as exc:
        raise TooLarge(str(exc)) from None
    except ValueError as exc:
        raise ValidationError(str(exc)) from None


async def followed(gw: Gateway, request: RunRequested, on_event: OnEvent | None = None) -> RunView:
    """Submit ``request`` and follow it to its answer, as the view of the events followed."""
    gathered = Gathered(on_event)
    return gathered.view(await gw.client.run(request, gathered, gw.run_timeout))


async def settled(gw: Gateway, following: Awaitable[RunView], run_id: str) -> RunView:
    """Wait for a run to reach an answer; mesh trouble becomes 503 or 504. The view is of
    the events the follower read: the run is not read again."""
    try:
        return await following
    except RequestMismatch:
        raise
    except ClientError:
        raise Timeout(
            f"run {run_id} has no answer within {gw.run_timeout:g} s; it goes on in the mesh: "
            f"GET /api/runs/{run_id}"
        ) from None
    except (NatsError, TimeoutError):
        raise Unavailable("the mesh did not answer; retry when it is up") from None


async def answer(gw: Gateway, following: Awaitable[RunView], run_id: str) -> RunResponse:
    """Wait for a run to reach an answer and map it (``settled``)."""
    return run_response(await settled(gw, following, run_id))


@router.post("/run", response_model=RunResponse, responses=responses(*RUN_ERRORS))
async def run(body: RunBody, user: User, gw: Gw) -> RunResponse:
    """Run a request; answers once it is completed, failed or awaiting_confirmation."""
    request = await start(body, user, gw)
    return await answer(gw, followed(gw, request), request.run_id)


def plain(event: AnyEvent) -> str | None:
    """The progress line for ``event`` as plain text."""
    line = progress_line(event)
    return line.text if line else None


def error_line(exc: Exception) -> bytes:
    """002 §2's ``{"type": "error", "error": ...}`` with the §8 class the error belongs to;
    the message is the safe one the same error gets as an HTTP answer."""
    error = classify(exc)
    if status_of(error) >= 500:
        log.warning("run stream: %s", type(exc).__name__)
    return ndjson({"type": "error", "error": str(error), "errorType": type_name(type(error))})


def ndjson(item: dict[str, Any]) -> bytes:
    return json.dumps(item, ensure_ascii=False).encode() + b"\n"


async def lines(gw: Gateway, request: RunRequested) -> AsyncIterator[bytes]:
    """status, one delta per progress line, then result or error; the run survives a hang-up."""
    queue: asyncio.Queue[str | None] = asyncio.Queue()

    def on_event(event: AnyEvent) -> None:
        line = plain(event)
        if line:
            queue.put_nowait(line)

    following = asyncio.create_task(followed(gw, request, on_event))
    following.add_done_callback(lambda _: queue.put_nowait(None))
    yield ndjson(
        {
            "type": "status",
            "status": "planning",
            "threadId": request.thread_id,
            "runId": request.run_id,
        }
    )
    try:
        while (line := await queue.get()) is not None:
            yield ndjson({"type": "delta", "delta": line})
        try:
            response = await answer(gw, following, request.run_id)
        except Exception as exc:  # noqa: BLE001 - the status is sent: every error class ends as a line
            yield error_line(exc)
            return
        yield ndjson({"type": "result", "result": response.model_dump(by_alias=True, mode="json")})
    finally:
        if not following.done():
            following.cancel()


STREAM_OK: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Newline-delimited JSON: status, deltas, then result or error",
        "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
    }
}


@router.post(
    "/run/stream",
    response_class=NDJSONResponse,
    responses={**STREAM_OK, **responses(*RUN_ERRORS, by_ref=True)},
)
async def run_stream(body: RunBody, user: User, gw: Gw) -> NDJSONResponse:
    """Run a request and watch it: one JSON object a line."""
    request = await start(body, user, gw)
    return NDJSONResponse(lines(gw, request))
