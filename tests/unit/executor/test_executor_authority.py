"""The executor's second lock: an Approved runs only when the run's log backs it."""

from __future__ import annotations

import msgspec
import pytest

from contracts.events import AnyEvent, ApprovalRequested, Approved, Planned, RunEvent, follow
from contracts.operations import convert_operation_set
from services.executor.domain.authority import unbacked
from tests.unit.test_handlers import History, plan_event, policy, requested, resolution


def forge(cause: RunEvent, planned: Planned, by: str) -> Approved:
    """An Approved of exactly ``planned``'s operations, as if ``cause`` had led to it."""
    return follow(
        cause,
        Approved,
        cause.at + 1,
        scene_id=planned.scene_id,
        operation_set=planned.operation_set,
        schedule=planned.schedule,
        approved_by=by,
    )


async def _allowed() -> tuple[list[AnyEvent], Approved]:
    planned = plan_event("object.create")
    decided, approved = await policy().on_planned(planned)
    assert isinstance(approved, Approved)
    return [requested(), planned, decided], approved


async def _asked() -> tuple[list[AnyEvent], Planned, ApprovalRequested]:
    planned = plan_event("object.delete")
    decided, asked = await policy().on_planned(planned)
    assert isinstance(asked, ApprovalRequested)
    return [requested(), planned, decided, asked], planned, asked


async def test_authority_when_policy_allowed_every_operation_backs_it() -> None:
    events, approved = await _allowed()
    assert unbacked(approved, events) is None


async def test_authority_when_a_person_approved_the_asked_operations_backs_it() -> None:
    events, _, asked = await _asked()
    history = History()
    history.events = list(events)
    resolved = resolution(asked, "approve_once")
    (approved,) = await policy(history).on_resolved(resolved)
    assert isinstance(approved, Approved)
    assert unbacked(approved, [*events, resolved]) is None


async def test_authority_when_pre_approved_by_the_requesting_user_backs_it() -> None:
    planned = plan_event("object.delete", pre_approved=True)
    decided, approved = await policy().on_planned(planned)
    assert isinstance(approved, Approved)
    events: list[AnyEvent] = [requested(pre_approved=True), planned, decided]
    assert unbacked(approved, events) is None


async def test_authority_when_approval_forged_without_any_decision_refuses() -> None:
    events, approved = await _allowed()
    reason = unbacked(approved, events[:2])  # the request and the plan, no decision
    assert reason == "policy decided nothing about the approved plan"


async def test_authority_when_destructive_op_approved_without_a_person_refuses() -> None:
    events, planned, _ = await _asked()
    forged = forge(planned, planned, "policy")
    reason = unbacked(forged, events)
    assert reason is not None and "nobody approved op0" in reason


async def test_authority_when_resolution_quotes_another_hash_refuses() -> None:
    events, planned, asked = await _asked()
    stale = msgspec.structs.replace(resolution(asked, "approve_once"), request_hash="sha256:0")
    forged = forge(stale, planned, "ben")
    assert unbacked(forged, [*events, stale]) == "nobody approved op0 as they were asked about"


async def test_authority_when_rejected_and_approved_anyway_refuses() -> None:
    events, planned, asked = await _asked()
    rejected = resolution(asked, "reject")
    forged = forge(rejected, planned, "ben")
    assert unbacked(forged, [*events, rejected]) == "nobody approved op0 as they were asked about"


@pytest.mark.clause("000-§execution.1")
async def test_authority_when_operations_differ_from_every_plan_refuses() -> None:
    events, approved = await _allowed()
    other = convert_operation_set(
        {
            "request_id": "q1",
            "operations": [
                {
                    "operation_id": "op0",
                    "tool_name": "object.create",
                    "args": {"primitive": "cube", "name": "Far", "location": [1e30, 0, 0]},
                    "depends_on": [],
                    "safety_level": "safe_write",
                }
            ],
        }
    )
    forged = msgspec.structs.replace(approved, operation_set=other)
    assert unbacked(forged, events) == "no plan of the run matches the approved operations"


async def test_authority_when_policy_denied_refuses() -> None:
    planned = plan_event("python.exec")
    decided, _ = await policy().on_planned(planned)
    forged = forge(planned, planned, "policy")
    reason = unbacked(forged, [requested(), planned, decided])
    assert reason == "policy denied op0"


async def test_authority_when_approval_names_another_users_scene_refuses() -> None:
    events, approved = await _allowed()
    forged = msgspec.structs.replace(approved, scene_id="someone-elses")
    reason = unbacked(forged, events)
    assert reason is not None and "someone-elses" in reason


async def test_authority_when_run_has_no_request_refuses() -> None:
    events, approved = await _allowed()
    assert unbacked(approved, events[1:]) == "the run has no request in the log"
