"""The bus door takes spec 002 §7's ``approve_and_always_allow_recipient`` and appends the
resolution under blendmesh's own name (docs/adr/0020), checked on in-memory ports."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import pytest

from contracts.events import (
    AnyEvent,
    ApprovalRequested,
    ApprovalResolved,
    RunRequested,
    encode_event,
    follow,
)
from services.doors.bus.handlers import DoorHandlers
from services.runtime.server.identity import UserEntry

REQUESTED = RunRequested(
    event_id="e0", at=0.0, run_id="r1", request_id="q1", thread_id="t1", user="ana",
    scene_id="s1", prompt="delete Box",
)  # fmt: skip
ASKED = follow(
    REQUESTED, ApprovalRequested, 1.0, approval_id="a1", operation_ids=["op1"], reason="destructive"
)
ANA = UserEntry(name="ana", keys=())


class Log:
    """The door's reads and its writer over one list of events."""

    def __init__(self) -> None:
        self.held: list[AnyEvent] = [REQUESTED, ASKED]
        self.published: list[AnyEvent] = []

    async def requested(self, run_id: str) -> RunRequested | None:
        return REQUESTED if run_id == REQUESTED.run_id else None

    async def events(self, run_id: str) -> Sequence[AnyEvent]:
        return self.held

    async def publish(self, event: Any) -> int:
        self.published.append(event)
        return len(self.published)


def resolution(decision: str) -> bytes:
    event = follow(
        ASKED, ApprovalResolved, 2.0, approval_id="a1", decision=decision, resolved_by="ana"
    )
    return encode_event(event)


@pytest.mark.clause("002-§approvals.5")
@pytest.mark.parametrize(
    ("sent", "logged"),
    [
        ("approve_and_always_allow_recipient", "approve_and_always_allow"),
        ("approve_and_always_allow", "approve_and_always_allow"),
        ("approve_once", "approve_once"),
        ("reject", "reject"),
    ],
)
async def test_door_resolve_when_decision_sent_logs_blendmeshs_name(sent: str, logged: str) -> None:
    log = Log()
    door = DoorHandlers(reads=log, writer=log)  # type: ignore[arg-type]
    reply = await door.answer(ANA, "run.resolve", resolution(sent))
    assert reply.ok, reply
    (published,) = log.published
    assert isinstance(published, ApprovalResolved) and published.decision == logged


async def test_door_resolve_when_decision_unknown_refuses_naming_the_field() -> None:
    log = Log()
    door = DoorHandlers(reads=log, writer=log)  # type: ignore[arg-type]
    body = msgspec.json.decode(resolution("approve_once"))
    body["decision"] = "approve_forever"
    reply = await door.answer(ANA, "run.resolve", msgspec.json.encode(body))
    assert not reply.ok and reply.error is not None
    assert reply.error.code == "INVALID" and "decision" in reply.error.message
    assert log.published == []
