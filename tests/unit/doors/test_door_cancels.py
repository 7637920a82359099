"""The bus door's ``run.cancel``: who may ask, and what the log gets. In-memory ports."""

from __future__ import annotations

import msgspec
import pytest

from contracts.events import CancelRequested, RunCompleted, encode_event, follow
from services.doors.bus.handlers import DoorHandlers
from services.runtime.server.identity import UserEntry
from tests.unit.doors.test_door_decisions import ANA, REQUESTED, Log

BEN = UserEntry(name="ben", keys=())
CAROL = UserEntry(name="carol", keys=())


def asked(by: str, reason: str = "", **changes: object) -> bytes:
    event = follow(REQUESTED, CancelRequested, 5.0, cancelled_by=by, reason=reason)
    return encode_event(msgspec.structs.replace(event, **changes))


async def test_door_cancel_when_the_runs_user_asks_logs_the_runs_one_cancel() -> None:
    log = Log()
    door = DoorHandlers(reads=log, writer=log, clock=lambda: 9.0)  # type: ignore[arg-type]
    # The client's own event id is not what the log keeps: the run's one cancel id is.
    reply = await door.answer(ANA, "run.cancel", asked("ana", "typo", event_id="mine"))
    assert reply.ok, reply
    (published,) = log.published
    assert isinstance(published, CancelRequested)
    assert (published.cancelled_by, published.reason, published.at) == ("ana", "typo", 9.0)
    assert published.event_id == follow(REQUESTED, CancelRequested, 0.0, cancelled_by="x").event_id


async def test_door_cancel_when_an_approver_asks_is_taken_and_a_stranger_is_not_found() -> None:
    log = Log()
    door = DoorHandlers(reads=log, writer=log, approvers=lambda: frozenset({"ben"}))  # type: ignore[arg-type]
    assert (await door.answer(BEN, "run.cancel", asked("ben"))).ok
    reply = await door.answer(CAROL, "run.cancel", asked("carol"))
    assert not reply.ok and reply.error is not None
    assert (reply.error.code, reply.error.message) == ("NOT_FOUND", "no run r1")
    assert len(log.published) == 1


@pytest.mark.parametrize(
    ("body", "code", "says"),
    [
        (asked("ben"), "FORBIDDEN", "cancelled_by is 'ben', but this login is 'ana'"),
        (asked("ana", run_id="r2"), "NOT_FOUND", "no run r2"),
        (asked("ana", "x" * 501), "INVALID", "length <= 500 - at `$.reason`"),
        (b'{"type": "run.requested"}', "INVALID", "not a run.cancel_requested event"),
        (encode_event(REQUESTED), "INVALID", "run.cancel takes a run.cancel_requested event"),
    ],
)
async def test_door_cancel_when_the_body_is_wrong_refuses_and_logs_nothing(
    body: bytes, code: str, says: str
) -> None:
    log = Log()
    door = DoorHandlers(reads=log, writer=log)  # type: ignore[arg-type]
    reply = await door.answer(ANA, "run.cancel", body)
    assert not reply.ok and reply.error is not None
    assert reply.error.code == code and says in reply.error.message
    assert log.published == []


async def test_door_cancel_when_the_run_ended_is_a_conflict() -> None:
    log = Log()
    log.held.append(
        follow(REQUESTED, RunCompleted, 3.0, summary="done", blend_path=None, scene_hash=None)
    )
    door = DoorHandlers(reads=log, writer=log)  # type: ignore[arg-type]
    reply = await door.answer(ANA, "run.cancel", asked("ana"))
    assert not reply.ok and reply.error is not None
    assert reply.error.code == "CONFLICT" and "completed already" in reply.error.message
    assert log.published == []
