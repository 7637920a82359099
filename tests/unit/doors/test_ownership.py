"""The one ownership rule every door applies: what is the caller's, and that anything else
is refused exactly like something unknown."""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import pytest

from contracts.scenes import Head
from services.doors.core.ownership import (
    NotOwned,
    own_approval,
    own_run,
    own_scene,
    own_thread,
    owns,
)
from tests.support.trusted_runs import asked, delete_op, requested


def head(owner: str) -> Head:
    return Head(scene_id="s", revision=1, scene_hash="h", object_name="s/1", epoch=1, owner=owner)


def refusal(check: Callable[..., object], *args: object) -> str:
    with pytest.raises(NotOwned) as caught:
        check(*args)
    return str(caught.value)


def test_owns_when_owner_unrecorded_or_unknown_is_nobodys() -> None:
    assert owns("ana", "ana")
    assert not owns("ben", "ana")
    assert not owns("", "ana") and not owns("", "")
    assert not owns(None, "ana")


def test_own_scene_when_ownerless_refuses_whoever_asks_like_an_unknown_scene() -> None:
    assert own_scene(head("ana"), "s", "ana").owner == "ana"
    unknown = refusal(own_scene, None, "s", "ana")
    assert refusal(own_scene, head(""), "s", "ana") == unknown == "no scene s"
    assert refusal(own_scene, head("ben"), "s", "ana") == unknown


def test_own_run_when_another_users_refuses_like_an_unknown_run() -> None:
    mine = requested()
    theirs = msgspec.structs.replace(mine, user="ben")
    assert own_run(mine, mine.run_id, "ana") is mine
    assert refusal(own_run, theirs, "run-t", "ana") == refusal(own_run, None, "run-t", "ana")


def test_own_thread_when_new_anyones_when_started_its_starters_only() -> None:
    own_thread(None, "thr", "ana")
    own_thread("ana", "thr", "ana")
    assert refusal(own_thread, "ben", "thr", "ana") == "no thread thr"


def test_own_approval_when_another_users_refuses_like_an_unknown_approval() -> None:
    mine = asked(delete_op())
    theirs = msgspec.structs.replace(mine, user="ben")
    assert own_approval(mine, "appr-t", "ana") is mine
    assert refusal(own_approval, theirs, "appr-t", "ana") == refusal(
        own_approval, None, "appr-t", "ana"
    )
