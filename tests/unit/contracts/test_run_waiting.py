"""Why a followed run waits: the service its newest event waits for, asked after a quiet
spell, and what the person is told (services/doors/core/waiting.py, the client's follower)."""

from __future__ import annotations

import time

import pytest

from contracts.events import AnyEvent, Approved, follow
from services.doors.core import waiting
from services.doors.core.run_watch import Waiting, Watch
from tests.unit.test_handlers import plan_event, requested


def approved() -> list[AnyEvent]:
    planned = plan_event("object.create")
    ok = follow(
        planned,
        Approved,
        2.0,
        scene_id=planned.scene_id,
        operation_set=planned.operation_set,
        schedule=planned.schedule,
        approved_by="policy",
    )
    return [requested(), planned, ok]


@pytest.mark.parametrize(
    ("kind", "roles"),
    [
        ("run.requested", ("planner", "executor")),  # the planner plans on their catalog
        ("run.planned", ("policy",)),
        ("run.approved", ("executor",)),
        ("run.op_succeeded", ("executor",)),
        ("run.executed", ("guardians", "planner")),
        ("run.gates_evaluated", ("planner",)),
        ("run.approval_requested", ()),  # a person, not a service
        ("run.completed", ()),
    ],
)
def test_needs_when_given_the_newest_event_names_the_services_that_act_next(
    kind: str, roles: tuple[str, ...]
) -> None:
    assert waiting.NEXT.get(kind, ()) == roles


def test_needs_when_approved_is_the_executor_and_before_anything_the_planner() -> None:
    assert waiting.needs(approved()) == ("executor",)
    assert waiting.needs([]) == ("planner", "executor")


class Presence:
    def __init__(self, counts: dict[str, int]) -> None:
        self.counts = counts
        self.asked: list[str] = []

    async def __call__(self, role: str) -> int:
        self.asked.append(role)
        return self.counts.get(role, 0)


async def test_follower_when_quiet_and_no_executor_says_so_once_and_how_to_start_one() -> None:
    told: list[str] = []
    presence = Presence({"executor": 0})
    wait = Waiting("run-1", Watch(presence=presence, notice=told.append, stall_after=0.0))
    events = approved()
    await wait.check(events)
    await wait.check(events)
    assert presence.asked == ["executor", "executor"]
    (text,) = told  # said once while nothing changes
    assert text.startswith("no executor is running: run run-1 waits for one after run.approved")
    assert "`blendmesh up`" in text and "python -m services.executor" in text
    message = wait.timed_out(events, 5.0)
    assert message.startswith("no result within 5 s for run run-1; no executor is running")


async def test_follower_when_the_service_answers_says_nothing_until_it_is_slow() -> None:
    told: list[str] = []
    watch = Watch(Presence({"executor": 2}), told.append, stall_after=0.0, slow_after=3600.0)
    wait = Waiting("run-1", watch)
    await wait.check(approved())
    assert told == [] and "no executor" not in wait.timed_out(approved(), 1.0)
    wait.moved = time.monotonic() - 7200.0
    await wait.check(approved())
    assert told and "(2 running)" in told[0]


async def test_follower_when_not_quiet_long_enough_or_waiting_for_a_person_asks_nobody() -> None:
    presence = Presence({})
    wait = Waiting("run-1", Watch(presence, print, stall_after=3600.0))
    await wait.check(approved())
    assert presence.asked == []
    wait = Waiting("run-1", Watch(presence, print, stall_after=0.0))
    await wait.check([])  # not even the request is stored: the planner reads it first
    assert presence.asked == ["planner", "executor"]


async def test_follower_when_the_planner_runs_but_no_executor_names_the_executor() -> None:
    told: list[str] = []
    wait = Waiting("run-1", Watch(Presence({"planner": 1}), told.append, stall_after=0.0))
    await wait.check(approved()[:1])
    assert wait.absent == "executor" and told[0].startswith("no executor is running")


async def test_follower_when_the_ping_fails_tells_nothing() -> None:
    told: list[str] = []

    async def broken(role: str) -> int:
        raise TimeoutError

    wait = Waiting("run-1", Watch(broken, told.append, stall_after=0.0))
    await wait.check(approved())
    assert told == [] and wait.absent is None


FULL = "its writes are refused for 4 s: JetStream's store is full. Free disk space ..."


async def test_follower_when_the_executor_says_its_writes_are_refused_tells_why_once() -> None:
    told: list[str] = []

    async def problems(role: str) -> list[str]:
        return [FULL] if role == "executor" else []

    watch = Watch(Presence({"executor": 1}), told.append, problems, stall_after=0.0)
    wait = Waiting("run-1", watch)
    events = approved()
    await wait.check(events)
    await wait.check(events)
    (text,) = told  # said once while nothing changes
    assert text == f"run run-1 waits after run.approved: the executor says {FULL}"
    message = wait.timed_out(events, 5.0)
    assert message.startswith(f"no result within 5 s for run run-1; {text}")
    wait.moved_now()  # the run moved: what held it is no longer said
    assert "store is full" not in wait.timed_out(events, 5.0)


async def test_follower_when_the_services_say_nothing_is_wrong_waits_until_slow() -> None:
    told: list[str] = []

    async def problems(role: str) -> list[str]:
        return []

    watch = Watch(Presence({"executor": 1}), told.append, problems, 0.0, slow_after=3600.0)
    wait = Waiting("run-1", watch)
    await wait.check(approved())
    assert told == [] and wait.trouble is None


async def test_follower_when_asking_for_problems_fails_tells_nothing() -> None:
    told: list[str] = []

    async def problems(role: str) -> list[str]:
        raise TimeoutError

    wait = Waiting("run-1", Watch(Presence({"executor": 1}), told.append, problems, 0.0))
    await wait.check(approved())
    assert told == [] and wait.trouble is None
