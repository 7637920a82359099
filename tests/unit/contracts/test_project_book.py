"""The projects book: roles, filings and locks folded from the log, each event re-checked
for the authority it claims (contracts/project_book.py)."""

from __future__ import annotations

import msgspec
import pytest

from contracts import subjects
from contracts.events import decode_event, encode_event
from contracts.project_book import ProjectBook, approves_own, may_manage, may_run
from contracts.projects import (
    LockBroken,
    LockExpired,
    LockReleased,
    LockTaken,
    MemberAdded,
    MemberRemoved,
    ProjectCreated,
    SceneFiled,
    personal_owner,
    personal_project,
)


def book_of(*events: object) -> ProjectBook:
    book = ProjectBook()
    for event in events:
        book.apply(event)  # type: ignore[arg-type]
    return book


def created(project: str = "shot010", by: str = "lea") -> ProjectCreated:
    return ProjectCreated(event_id=f"c-{project}", at=1.0, project_id=project, by=by)


def added(member: str, role: str, by: str = "lea", project: str = "shot010") -> MemberAdded:
    return MemberAdded(
        event_id=f"a-{member}-{role}", at=2.0, project_id=project, member=member,
        role=role, by=by,  # type: ignore[arg-type]
    )  # fmt: skip


def filed(scene: str, by: str = "lea", project: str = "shot010") -> SceneFiled:
    return SceneFiled(event_id=f"f-{scene}", at=3.0, project_id=project, scene_id=scene, by=by)


def taken(
    scene: str, holder: str, at: float = 10.0, ttl: float = 60.0, lock: str = "l1"
) -> LockTaken:
    return LockTaken(
        event_id=f"t-{lock}", at=at, lock_id=lock, scene_id=scene, holder=holder,
        expires_at=at + ttl,
    )  # fmt: skip


def test_book_when_project_created_makes_its_creator_lead() -> None:
    book = book_of(created())
    assert book.role("shot010", "lea") == "lead"
    assert book.role("shot010", "ben") is None


def test_book_when_a_second_create_names_the_same_id_keeps_the_first() -> None:
    book = book_of(created(by="lea"), created(by="mallory"))
    assert book.role("shot010", "mallory") is None


def test_book_when_a_non_lead_adds_a_member_changes_nothing() -> None:
    book = book_of(created(), added("ben", "artist"), added("eve", "supervisor", by="ben"))
    assert book.role("shot010", "ben") == "artist"
    assert book.role("shot010", "eve") is None


def test_book_when_the_last_lead_would_leave_keeps_the_lead() -> None:
    removed = MemberRemoved(event_id="r", at=4.0, project_id="shot010", member="lea", by="lea")
    book = book_of(created(), removed, added("lea", "viewer"))
    assert book.role("shot010", "lea") == "lead"


def test_book_when_a_member_is_removed_answers_it_nothing() -> None:
    removed = MemberRemoved(event_id="r", at=4.0, project_id="shot010", member="ben", by="lea")
    book = book_of(created(), added("ben", "artist"), filed("s1"), removed)
    assert book.scene_role("s1", "lea", "ben") is None


def test_book_when_a_scene_is_filed_gives_members_their_roles_on_it() -> None:
    book = book_of(created(), added("ben", "artist"), added("vic", "viewer"), filed("s1"))
    assert book.scene_role("s1", "lea", "ben") == "artist"
    assert book.scene_role("s1", "lea", "vic") == "viewer"
    assert book.scene_role("s1", "lea", "zed") is None
    assert book.project_of("s1", "lea") == "shot010"
    assert book.leads_of("s1") == ["lea"]


def test_book_when_a_scene_is_filed_twice_the_first_filing_stands() -> None:
    book = book_of(
        created(), created("other", by="ben"), filed("s1"), filed("s1", by="ben", project="other")
    )
    assert book.project_of("s1", "lea") == "shot010"


def test_book_when_a_viewer_files_a_scene_refuses_it() -> None:
    book = book_of(created(), added("vic", "viewer"), filed("s9", by="vic"))
    assert book.project_of("s9", "vic") == personal_project("vic")


def test_book_when_a_scene_is_filed_nowhere_is_its_owners_personal_project() -> None:
    book = ProjectBook()
    assert book.project_of("s1", "ana") == "user:ana"
    assert personal_owner(book.project_of("s1", "ana")) == "ana"
    assert book.scene_role("s1", "ana", "ana") == "lead"
    assert book.scene_role("s1", "ana", "ben") is None
    assert book.scene_role("s1", None, "ana") is None  # nobody's scene stays nobody's


def test_roles_when_asked_what_each_may_do_follow_the_adr() -> None:
    assert [may_run(r) for r in ("viewer", "artist", "lead", "supervisor")] == [
        False, True, True, True,
    ]  # fmt: skip
    assert not approves_own("artist") and approves_own("lead")
    assert not may_manage("artist") and may_manage("supervisor") and not may_manage(None)


def test_lock_when_taken_is_held_until_it_expires() -> None:
    book = book_of(taken("s1", "ana", at=10.0, ttl=60.0))
    held = book.lock("s1", 20.0)
    assert held is not None and held.holder == "ana"
    assert book.lock("s1", 70.0) is None
    lapsed = book.lapsed("s1", 70.0)
    assert lapsed is not None and lapsed.lock_id == "l1"
    book.apply(LockExpired(event_id="x", at=71.0, lock_id="l1", scene_id="s1", holder="ana"))
    assert book.lapsed("s1", 80.0) is None


def test_lock_when_another_takes_a_held_lock_keeps_the_holder() -> None:
    book = book_of(taken("s1", "ana"), taken("s1", "ben", at=11.0, lock="l2"))
    held = book.lock("s1", 12.0)
    assert held is not None and held.holder == "ana"


def test_lock_when_released_or_broken_frees_the_scene() -> None:
    released = LockReleased(event_id="r", at=12.0, lock_id="l1", scene_id="s1", holder="ana")
    book = book_of(taken("s1", "ana"), released, taken("s1", "ben", at=13.0, lock="l2"))
    held = book.lock("s1", 14.0)
    assert held is not None and held.holder == "ben"
    broken = LockBroken(event_id="b", at=15.0, lock_id="l2", scene_id="s1", holder="ben", by="lea")
    book.apply(broken)
    assert book.lock("s1", 16.0) is None


def test_lock_when_an_old_lock_id_is_released_leaves_the_new_lock() -> None:
    released = LockReleased(event_id="r", at=12.0, lock_id="l1", scene_id="s1", holder="ana")
    book = book_of(taken("s1", "ana", ttl=1.0), taken("s1", "ben", at=12.0, lock="l2"), released)
    held = book.lock("s1", 13.0)
    assert held is not None and held.holder == "ben"


def test_events_when_encoded_decode_and_land_on_their_subjects() -> None:
    event = taken("scene.with.dots", "ana")
    assert decode_event(encode_event(event)) == event
    assert subjects.for_event("bm", event).startswith("bm.lock.=")
    assert subjects.for_event("bm", created()) == "bm.project.shot010.created"


def test_events_when_project_id_breaks_subject_syntax_are_invalid() -> None:
    bad = b'{"type":"project.created","event_id":"e","at":1.0,"project_id":"a.>","by":"x"}'
    with pytest.raises(msgspec.ValidationError, match="project_id"):
        decode_event(bad)
    personal = b'{"type":"project.created","event_id":"e","at":1.0,"project_id":"user:x","by":"x"}'
    with pytest.raises(msgspec.ValidationError):
        decode_event(personal)  # a personal project is never created by an event
