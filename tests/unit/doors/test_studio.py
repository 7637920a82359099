"""The doors' project and lock rules over an in-memory log: what each role may change, a
lapsed lock recorded as expired before the next take, and a take that lost a race to
another is answered as locked, never as done (services/doors/core/studio.py)."""

from __future__ import annotations

import pytest

from contracts.events import Event
from contracts.project_book import ProjectBook
from contracts.projects import LockExpired, LockTaken, StudioEvent
from contracts.scenes import Head
from services.doors.core.ownership import NotOwned
from services.doors.core.studio import BadStudioRequest, Forbidden, SceneLocked, Studio


class MemoryLog:
    """The log and the book it folds into: what a door publishes, the book holds at once."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.book = ProjectBook()
        self.race: StudioEvent | None = None  # published by "another door" just before ours

    async def publish(self, event: Event) -> int:
        if self.race is not None:
            self.book.apply(self.race)
            self.events.append(self.race)
            self.race = None
        assert isinstance(event, StudioEvent)
        self.book.apply(event)
        self.events.append(event)
        return len(self.events)

    async def current(self) -> ProjectBook:
        return self.book


class Heads:
    async def head(self, scene_id: str) -> Head | None:
        owner = {"shot": "lea", "zeds": "zed"}.get(scene_id)
        if owner is None:
            return None
        return Head(
            scene_id=scene_id,
            revision=1,
            scene_hash="h" * 16,
            object_name="o",
            epoch=1,
            owner=owner,
        )


class Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def studio() -> Studio:
    log = MemoryLog()
    out = Studio(log, Heads(), log, clock=Clock())
    await out.create("shot010", "lea")
    await out.add_member("shot010", "ben", "artist", "lea")
    await out.add_member("shot010", "vic", "viewer", "lea")
    await out.file_scene("shot010", "shot", "lea")
    return out


def log_of(studio: Studio) -> MemoryLog:
    assert isinstance(studio.publisher, MemoryLog)
    return studio.publisher


async def test_studio_when_a_viewer_or_an_outsider_starts_a_run_refuses_it(studio: Studio) -> None:
    with pytest.raises(Forbidden, match="viewer of scene shot's project"):
        await studio.may_start("shot", "vic")
    with pytest.raises(NotOwned, match="no scene shot"):
        await studio.may_start("shot", "zed")
    await studio.may_start("shot", "ben")
    await studio.may_start("new-scene", "zed")  # a scene nobody has yet is anyone's first


async def test_studio_when_an_artist_manages_members_is_forbidden(studio: Studio) -> None:
    with pytest.raises(Forbidden, match="only a lead adds members"):
        await studio.add_member("shot010", "eve", "lead", "ben")
    with pytest.raises(BadStudioRequest, match="role 'owner'"):
        await studio.add_member("shot010", "eve", "owner", "lea")
    with pytest.raises(NotOwned, match="no scene zeds"):
        await studio.file_scene("shot010", "zeds", "lea")


async def test_lock_when_lapsed_is_recorded_expired_before_the_next_take(studio: Studio) -> None:
    clock = studio.clock
    assert isinstance(clock, Clock)
    await studio.lock("shot", "ben", ttl=60)
    with pytest.raises(SceneLocked, match="locked by ben until"):
        await studio.may_start("shot", "lea")
    clock.now += 61
    await studio.may_start("shot", "lea")  # lapsed: nothing holds the scene
    taken = await studio.lock("shot", "lea", ttl=60)
    kinds = [type(e).__name__ for e in log_of(studio).events[-3:]]
    assert kinds == ["LockTaken", "LockExpired", "LockTaken"]
    expired = log_of(studio).events[-2]
    assert isinstance(expired, LockExpired) and expired.holder == "ben"
    assert taken.holder == "lea"


async def test_lock_when_another_door_took_it_first_answers_locked_naming_the_winner(
    studio: Studio,
) -> None:
    log_of(studio).race = LockTaken(
        event_id="other", at=1000.0, lock_id="lock-other", scene_id="shot", holder="ben",
        expires_at=5000.0,
    )  # fmt: skip
    with pytest.raises(SceneLocked, match="locked by ben"):
        await studio.lock("shot", "lea")


async def test_lock_when_a_lead_breaks_it_records_who_and_why(studio: Studio) -> None:
    await studio.lock("shot", "ben", note="anim")
    with pytest.raises(Forbidden, match="only a lead breaks locks"):
        await studio.break_lock("shot", "vic")
    with pytest.raises(Forbidden, match="locked by ben, not you"):
        await studio.unlock("shot", "lea")
    broken = await studio.break_lock("shot", "lea", "review")
    assert broken.holder == "ben"
    last = log_of(studio).events[-1]
    assert (type(last).__name__, last.by, last.note) == ("LockBroken", "lea", "review")  # type: ignore[attr-defined]
    with pytest.raises(NotOwned, match="no lock on scene shot"):
        await studio.unlock("shot", "ben")


async def test_answers_for_when_an_artist_answers_its_own_waiting_run_is_forbidden(
    studio: Studio,
) -> None:
    with pytest.raises(Forbidden, match=r"waits for a lead of project shot010.*ask lea"):
        await studio.answers_for("ben", "shot010", "shot", "ben")
    assert await studio.answers_for("ben", "shot010", "shot", "lea")
    assert not await studio.answers_for("ben", "shot010", "shot", "vic")
    assert not await studio.answers_for("ben", "shot010", "shot", "zed")
    assert await studio.answers_for("lea", None, "shot", "lea")
