"""The gateway answers a run from the events its follower read: it does not read the run
again, and its answer says what the run's view says."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from contracts import events as ev
from contracts.fold import fold_run
from contracts.operations import Operation, OperationSet
from contracts.receipts import RunResult
from services.doors.gateway.agent import answer, followed, lines
from tests.support.trusted_runs import RUN, asked, delete_op, requested

PLANNED = ev.Planned(
    event_id="plan",
    at=1.5,
    **RUN,
    scene_id="s",
    planner="rules",
    operation_set=OperationSet(
        request_id="req-t",
        operations=[
            Operation(
                operation_id="op1",
                tool_name="object.delete",
                args={"name": "Box"},
                depends_on=[],
                safety_level="destructive",
            )
        ],
    ),
    schedule=["op1"],
    catalog_version="v",
)
EVENTS: list[ev.AnyEvent] = [requested(), PLANNED, asked(delete_op())]


@dataclass
class _Client:
    """A follower that hands on the run's events and answers their fold, as MeshClient.run."""

    runs: list[str] = field(default_factory=list)

    async def run(
        self,
        request: ev.RunRequested,
        on_event: Callable[[ev.AnyEvent], None] | None = None,
        timeout: Any = None,
    ) -> RunResult:
        self.runs.append(request.run_id)
        for event in EVENTS:
            if on_event is not None:
                on_event(event)
        result = fold_run(EVENTS)
        assert result is not None
        return result


@dataclass
class _Gateway:
    """No bus: a gateway that read the run again would fail on it."""

    client: _Client = field(default_factory=_Client)
    run_timeout: float = 1.0


async def test_answer_when_a_run_waits_maps_the_followed_events_without_reading_again() -> None:
    gw: Any = _Gateway()
    response = await answer(gw, followed(gw, requested()), "run-t")
    assert gw.client.runs == ["run-t"]
    assert (response.status, response.summary) == (
        "awaiting_confirmation",
        "waiting for approval of op1",
    )
    [action] = response.actions
    assert (action.operation_id, action.status, action.requires_approval) == (
        "op1",
        "awaiting_confirmation",
        False,
    )


async def test_stream_when_a_run_waits_ends_with_the_same_answer() -> None:
    gw: Any = _Gateway()
    got = [json.loads(line) async for line in lines(gw, requested())]
    assert got[0]["type"] == "status" and got[-1]["type"] == "result"
    assert got[-1]["result"]["actions"][0]["status"] == "awaiting_confirmation"
    assert any(g["type"] == "delta" for g in got)  # the deltas still reach the stream
