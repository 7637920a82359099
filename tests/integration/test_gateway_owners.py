"""The gateway's ownership index against a real log: first user wins a thread, and a lookup
sees every event published before it, like the scan it replaces."""

from __future__ import annotations

import pytest

from contracts.events import ApprovalRequested, RunRequested
from services.runtime.service.host import Bus
from services.runtime.service.owners import IndexBehind, LogOwners, OwnerIndex

pytestmark = pytest.mark.integration


def requested(run_id: str, user: str, thread: str, scene: str) -> RunRequested:
    return RunRequested(
        event_id=f"req-{run_id}",
        at=1.0,
        run_id=run_id,
        request_id=f"r-{run_id}",
        thread_id=thread,
        user=user,
        scene_id=scene,
        prompt="add a cube",
    )


def asked(run_id: str, user: str, approval_id: str) -> ApprovalRequested:
    return ApprovalRequested(
        event_id=f"ask-{run_id}",
        at=2.0,
        run_id=run_id,
        request_id=f"r-{run_id}",
        thread_id="t",
        user=user,
        approval_id=approval_id,
        operation_ids=["op01"],
        reason="destructive",
    )


def test_index_when_two_users_use_one_thread_keeps_the_first() -> None:
    index = OwnerIndex()
    index.apply(requested("a", "ana", "shared", "s1"))
    index.apply(requested("b", "ben", "shared", "s2"))
    assert index.threads == {"shared": "ana"}
    assert index.scenes == {("s1", "ana"), ("s2", "ben")}


async def test_owners_when_events_just_published_sees_all_of_them(bus: Bus) -> None:
    owners = LogOwners(bus)
    try:
        assert (await owners.current()).threads == {}  # an empty log is caught up at once
        for i in range(50):
            await bus.publisher.publish(requested(f"r{i}", f"user{i % 3}", f"t{i}", f"s{i}"))
        await bus.publisher.publish(asked("r7", "user1", "appr-7"))
        index = await owners.current()
        assert len(index.threads) == 50 and index.threads["t49"] == "user1"
        assert ("s49", "user1") in index.scenes
        assert index.approvals["appr-7"].run_id == "r7"
        await bus.publisher.publish(requested("late", "ana", "t-late", "s-late"))
        assert (await owners.current()).threads["t-late"] == "ana"
    finally:
        await owners.close()


async def test_owners_when_closed_says_so_instead_of_answering(bus: Bus) -> None:
    owners = LogOwners(bus)
    await bus.publisher.publish(requested("r", "ana", "t", "s"))
    await owners.tail.caught_up()
    assert (await owners.current()).threads == {"t": "ana"}
    await owners.close()
    # A closed index would answer from whatever it last held: it says it was stopped.
    with pytest.raises(IndexBehind, match="the ownership index was stopped"):
        await owners.current()
