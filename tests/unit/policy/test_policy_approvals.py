"""Approvals as events (spec 002 §7): request hash, standing approvals, expiry."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from contracts.allowlist import AllowlistEntry
from contracts.canonical import canonical_hash
from contracts.events import (
    AllowlistRevoked,
    ApprovalRequested,
    ApprovalResolved,
    Approved,
    Denied,
    Event,
    PolicyDecided,
    follow,
)
from contracts.resolutions import canonical_resolution
from services.policy.allowlist import AllowlistResponders, revoked
from services.policy.handlers import PolicyHandlers
from services.policy.memory import MemoryAllowlist
from services.runtime.service.errors import Retry
from tests.unit.test_handlers import History, plan_event, policy, requested

TTL = 60.0


class Clock:
    def __init__(self, now: float = 7.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


async def waiting(
    allowlist: MemoryAllowlist | None = None, clock: Clock | None = None
) -> tuple[PolicyHandlers, History, ApprovalRequested]:
    history = History()
    handlers = policy(
        history, allowlist=allowlist or MemoryAllowlist(), clock=clock or Clock(), approval_ttl=TTL
    )
    planned = plan_event("object.delete", args={"name": "Box"})
    _, asked = await handlers.on_planned(planned)
    assert isinstance(asked, ApprovalRequested)
    history.events = [requested(), planned, asked]
    return handlers, history, asked


def resolve(asked: ApprovalRequested, decision: str, **kw: Any) -> ApprovalResolved:
    fields: dict[str, Any] = {
        "approval_id": asked.approval_id,
        "decision": decision,
        "resolved_by": "ana",
        "request_hash": asked.request_hash,
        **kw,
    }
    return follow(asked, ApprovalResolved, 8.0, **fields)


@pytest.mark.clause("002-§approvals.2", "002-§core-loop.8")
async def test_approval_request_when_asked_carries_operations_hash_and_expiry() -> None:
    _, _, asked = await waiting()
    (op,) = asked.operations
    assert (op.operation_id, op.tool, op.safety_level, op.args) == (
        "op0",
        "object.delete",
        "destructive",
        {"name": "Box"},
    )
    assert asked.request_hash == canonical_hash(asked.operations)
    assert asked.expires_at == 7.0 + TTL


async def test_resolution_when_hash_does_not_match_is_refused() -> None:
    handlers, _, asked = await waiting()
    assert await handlers.on_resolved(resolve(asked, "approve_once", request_hash="sha256:0")) == []
    assert await handlers.on_resolved(resolve(asked, "approve_once", request_hash="")) == []


async def test_second_resolution_when_first_approved_is_a_no_op() -> None:
    handlers, history, asked = await waiting()
    (approved,) = await handlers.on_resolved(resolve(asked, "approve_once"))
    history.events += [resolve(asked, "approve_once"), approved]
    assert await handlers.on_resolved(resolve(asked, "reject")) == []


@pytest.mark.clause("002-§approvals.5", "002-§policy.1")
async def test_approve_and_always_allow_when_same_op_again_allows_by_allowlist() -> None:
    allowlist = MemoryAllowlist()
    handlers, _, asked = await waiting(allowlist)
    (approved,) = await handlers.on_resolved(resolve(asked, "approve_and_always_allow"))
    assert isinstance(approved, Approved) and approved.approved_by == "ana"
    (entry,) = await allowlist.entries("ana")
    assert (entry.user, entry.tool, entry.scene_id) == ("ana", "object.delete", "s1")

    decided, again = await handlers.on_planned(plan_event("object.delete", args={"name": "B"}))
    assert isinstance(decided, PolicyDecided) and isinstance(again, Approved)
    assert decided.decisions[0].mode == "allow"
    assert decided.decisions[0].policy_ids == [f"allowlist#{entry.entry_id}"]
    assert again.approved_by == "policy"


async def test_allowlist_entry_when_revoked_asks_again() -> None:
    allowlist = MemoryAllowlist()
    handlers, _, asked = await waiting(allowlist)
    await handlers.on_resolved(resolve(asked, "approve_and_always_allow"))
    (entry,) = await allowlist.entries()
    assert await allowlist.revoke(entry.entry_id, user="ben") is False  # not ben's
    assert await allowlist.revoke(entry.entry_id) is True
    _, asked_again = await handlers.on_planned(plan_event("object.delete", args={"name": "B"}))
    assert isinstance(asked_again, ApprovalRequested)


async def test_allowlist_entry_when_tool_denied_still_denies() -> None:
    allowlist = MemoryAllowlist()
    handlers, _, asked = await waiting(allowlist)
    await handlers.on_resolved(resolve(asked, "approve_and_always_allow"))
    _, denied = await handlers.on_planned(plan_event("object.delete", args={"name": "N" * 70}))
    assert isinstance(denied, Denied) and denied.failure.error_code == "POLICY_BLOCKED"


async def test_allowlist_responders_when_listed_and_revoked_answer_entries() -> None:
    allowlist = MemoryAllowlist()
    handlers, _, asked = await waiting(allowlist)
    await handlers.on_resolved(resolve(asked, "approve_and_always_allow"))
    log = Recorded()
    responders = AllowlistResponders(None, "bm", allowlist, log, clock=lambda: 9.0)  # type: ignore[arg-type]
    listed = await responders.answer("allowlist.list", b'{"user": "ana"}')
    (entry,) = listed.entries
    ask = f'{{"entry_id": "{entry.entry_id}", "revoked_by": "ben"}}'.encode()
    revoked = await responders.answer("allowlist.revoke", ask)
    assert revoked.ok and revoked.entries == [entry]
    again = await responders.answer("allowlist.revoke", ask)
    assert not again.ok and "no allowlist entry" in (again.error or "")
    (recorded,) = log.events  # 002 §9: the revocation is an entry of the immutable log
    assert isinstance(recorded, AllowlistRevoked)
    assert (recorded.entry, recorded.revoked_by, recorded.at) == (entry, "ben", 9.0)


class Recorded:
    """The log as a list: what a responder appended, in order."""

    def __init__(self, fail: bool = False) -> None:
        self.events: list[Event] = []
        self.fail = fail

    async def publish(self, event: Event) -> int:
        if self.fail:
            raise ConnectionError("the log is unreachable")
        self.events.append(event)
        return len(self.events)


@pytest.mark.clause("002-§audit.9")
async def test_allowlist_revoke_when_the_log_refuses_keeps_the_entry() -> None:
    """No revocation without its record: the entry stays until the log holds the event."""
    allowlist = MemoryAllowlist()
    handlers, _, asked = await waiting(allowlist)
    await handlers.on_resolved(resolve(asked, "approve_and_always_allow"))
    (entry,) = await allowlist.entries("ana")
    responders = AllowlistResponders(None, "bm", allowlist, Recorded(fail=True))  # type: ignore[arg-type]
    with pytest.raises(ConnectionError, match="the log is unreachable"):
        await responders.answer("allowlist.revoke", f'{{"entry_id": "{entry.entry_id}"}}'.encode())
    assert await allowlist.entries("ana") == [entry]


def test_revoked_when_asked_twice_has_one_id_and_a_new_grant_another() -> None:
    entry = AllowlistEntry(
        entry_id="e1", user="ana", tool="object.delete", scene_id="s1", created_at=1.0,
        created_by="ana", run_id="r1",
    )  # fmt: skip
    first, second = revoked(entry, "ana", 2.0), revoked(entry, "ana", 3.0)
    assert first.event_id == second.event_id
    regranted = msgspec.structs.replace(entry, created_at=5.0)
    assert revoked(regranted, "ana", 6.0).event_id != first.event_id
    assert revoked(entry, "", 2.0).revoked_by == "unknown"


async def test_expiry_when_pending_and_not_expired_retries_later() -> None:
    clock = Clock()
    handlers, _, asked = await waiting(clock=clock)
    clock.now = 7.0 + TTL - 5.0
    with pytest.raises(Retry) as caught:
        await handlers.on_approval_requested(asked)
    assert caught.value.delay == pytest.approx(5.0)
    clock.now = 8.0
    with pytest.raises(Retry) as caught:
        await handlers.on_approval_requested(asked)
    assert caught.value.delay == 30.0


async def test_expiry_when_expired_and_pending_denies_with_approval_expired() -> None:
    clock = Clock()
    handlers, _, asked = await waiting(clock=clock)
    clock.now = 7.0 + TTL
    (denied,) = await handlers.on_approval_requested(asked)
    assert isinstance(denied, Denied) and denied.failure.error_code == "APPROVAL_EXPIRED"
    assert denied.operation_ids == ["op0"]


async def test_resolution_when_expired_denies_with_the_expiry_event() -> None:
    clock = Clock()
    handlers, _, asked = await waiting(clock=clock)
    clock.now = 7.0 + TTL + 1
    (late,) = await handlers.on_resolved(resolve(asked, "approve_once"))
    (timer,) = await handlers.on_approval_requested(asked)
    assert isinstance(late, Denied) and late.failure.error_code == "APPROVAL_EXPIRED"
    assert late.event_id == timer.event_id  # one event in the log, whichever came first


async def test_expiry_when_already_resolved_does_nothing() -> None:
    clock = Clock()
    handlers, history, asked = await waiting(clock=clock)
    (approved,) = await handlers.on_resolved(resolve(asked, "approve_once"))
    history.events += [resolve(asked, "approve_once"), approved]
    clock.now = 7.0 + TTL + 1
    assert await handlers.on_approval_requested(asked) == []


async def test_resolution_when_by_another_user_changes_nothing_and_stays_pending(
    caplog: pytest.LogCaptureFixture,
) -> None:
    handlers, _, asked = await waiting()
    assert await handlers.on_resolved(resolve(asked, "approve_once", resolved_by="bob")) == []
    assert await handlers.on_resolved(resolve(asked, "reject", resolved_by="bob")) == []
    assert "refused 'bob'" in caplog.text
    (approved,) = await handlers.on_resolved(resolve(asked, "approve_once"))  # still pending
    assert isinstance(approved, Approved) and approved.approved_by == "ana"


async def test_resolution_when_by_a_registered_approver_is_accepted() -> None:
    handlers, _, asked = await waiting()
    handlers.approvers = lambda: frozenset({"carol"})
    (approved,) = await handlers.on_resolved(resolve(asked, "approve_once", resolved_by="carol"))
    assert isinstance(approved, Approved) and approved.approved_by == "carol"


@pytest.mark.clause("002-§approvals.5")
async def test_spec_alias_when_resolving_always_allows_like_blendmeshs_own_name() -> None:
    """002 §7: ``approve_and_always_allow_recipient`` persists the allowlist and executes."""
    allowlist = MemoryAllowlist()
    handlers, _, asked = await waiting(allowlist)
    (approved,) = await handlers.on_resolved(resolve(asked, "approve_and_always_allow_recipient"))
    assert isinstance(approved, Approved)
    (entry,) = await allowlist.entries("ana")
    assert (entry.tool, entry.scene_id) == ("object.delete", "s1")


def test_canonical_resolution_when_alias_or_own_name_gives_blendmeshs_name() -> None:
    assert canonical_resolution("approve_and_always_allow_recipient") == "approve_and_always_allow"
    for own in ("approve_once", "approve_and_always_allow", "reject"):
        assert canonical_resolution(own) == own
