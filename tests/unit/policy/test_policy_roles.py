"""Policy reads the role the projects book gives the run's user on its scene: a viewer's
run is denied, an artist's destructive operation waits for a lead (its own answer and its
up-front approval do not count), and another user's lock denies every operation."""

from __future__ import annotations

from typing import Any

from contracts.events import (
    ApprovalRequested,
    ApprovalResolved,
    Approved,
    Denied,
    Planned,
    PolicyDecided,
    follow,
)
from contracts.operations import convert_operation_set
from contracts.project_book import ProjectBook
from contracts.projects import LockTaken, MemberAdded, ProjectCreated, SceneFiled
from services.executor.memory import StaticCatalog
from services.policy.cedar import CedarPolicy
from services.policy.handlers import PolicyHandlers
from services.policy.memory import MemoryAllowlist
from tests.support.catalog_fixture import CATALOG
from tests.unit.test_handlers import History, requested


def book(*, lock_holder: str | None = None) -> ProjectBook:
    out = ProjectBook()
    out.apply(ProjectCreated(event_id="c", at=1.0, project_id="shot010", by="lea"))
    for member, role in (("ben", "artist"), ("vic", "viewer"), ("sue", "supervisor")):
        out.apply(
            MemberAdded(
                event_id=member, at=2.0, project_id="shot010", member=member, role=role, by="lea"
            )  # type: ignore[arg-type]
        )
    out.apply(SceneFiled(event_id="f", at=3.0, project_id="shot010", scene_id="s1", by="lea"))
    if lock_holder is not None:
        out.apply(
            LockTaken(
                event_id="l",
                at=4.0,
                lock_id="l1",
                scene_id="s1",
                holder=lock_holder,
                expires_at=4.0 + 3600,
            )
        )
    return out


def planned(user: str, tool: str, args: dict[str, Any], **kw: Any) -> Planned:
    plan = {
        "request_id": "q1",
        "operations": [
            {"operation_id": "op01", "tool_name": tool, "args": args, "depends_on": [],
             "safety_level": "destructive" if tool == "object.delete" else "safe_write"}
        ],
    }  # fmt: skip
    cause = requested(plan=plan, **kw)
    cause = type(cause)(**{**{f: getattr(cause, f) for f in cause.__struct_fields__}, "user": user})
    return follow(
        cause,
        Planned,
        5.0,
        scene_id="s1",
        planner="plan",
        operation_set=convert_operation_set(plan),
        schedule=["op01"],
        catalog_version="test",
    )


def policy(projects: ProjectBook, history: History | None = None) -> PolicyHandlers:
    async def lea_owns(scene_id: str) -> str | None:
        return "lea"

    async def current() -> ProjectBook:
        return projects

    return PolicyHandlers(
        engine=CedarPolicy.load(),
        catalog=StaticCatalog(CATALOG),
        history=history or History(),
        allowlist=MemoryAllowlist(),
        scene_owner=lea_owns,
        clock=lambda: 10.0,
        projects=current,
    )


DELETE = ("object.delete", {"name": "Cube"})
ADD = ("object.create", {"primitive": "cube", "name": "A"})


async def test_policy_when_a_viewer_runs_denies_it_by_the_viewer_rule() -> None:
    decided, denied = await policy(book()).on_planned(planned("vic", *ADD))
    assert isinstance(decided, PolicyDecided) and isinstance(denied, Denied)
    assert decided.decisions[0].policy_ids == ["blendmesh.v1#viewers-change-nothing"]


async def test_policy_when_an_artist_writes_allows_it() -> None:
    _, approved = await policy(book()).on_planned(planned("ben", *ADD))
    assert isinstance(approved, Approved)


async def test_policy_when_an_artist_deletes_waits_for_a_lead_even_pre_approved() -> None:
    _, asked = await policy(book()).on_planned(planned("ben", *DELETE, pre_approved=True))
    assert isinstance(asked, ApprovalRequested)
    assert asked.lead_of == "shot010"


async def test_policy_when_a_lead_deletes_asks_the_lead_itself() -> None:
    _, asked = await policy(book()).on_planned(planned("lea", *DELETE))
    assert isinstance(asked, ApprovalRequested) and asked.lead_of is None


async def resolve_as(resolver: str) -> list[Any]:
    history = History()
    plan = planned("ben", *DELETE)
    handlers = policy(book(), history)
    _, asked = await handlers.on_planned(plan)
    assert isinstance(asked, ApprovalRequested)
    history.events = [plan, asked]
    answer = follow(
        asked,
        ApprovalResolved,
        6.0,
        approval_id=asked.approval_id,
        decision="approve_once",
        resolved_by=resolver,
        request_hash=asked.request_hash,
    )
    return list(await handlers.on_resolved(answer))


async def test_policy_when_the_artist_approves_its_own_delete_changes_nothing() -> None:
    assert await resolve_as("ben") == []


async def test_policy_when_a_viewer_approves_an_artists_delete_changes_nothing() -> None:
    assert await resolve_as("vic") == []


async def test_policy_when_a_lead_or_supervisor_approves_an_artists_delete_approves_it() -> None:
    for resolver in ("lea", "sue"):
        (approved,) = await resolve_as(resolver)
        assert isinstance(approved, Approved) and approved.approved_by == resolver


async def test_policy_when_another_user_holds_the_lock_denies_naming_the_holder() -> None:
    _, denied = await policy(book(lock_holder="lea")).on_planned(planned("ben", *ADD))
    assert isinstance(denied, Denied) and "locked by lea" in denied.message


async def test_policy_when_the_holder_runs_on_its_locked_scene_allows_it() -> None:
    _, approved = await policy(book(lock_holder="ben")).on_planned(planned("ben", *ADD))
    assert isinstance(approved, Approved)


async def test_policy_when_a_non_member_runs_on_a_filed_scene_denies_it() -> None:
    _, denied = await policy(book()).on_planned(planned("zed", *ADD))
    assert isinstance(denied, Denied) and "belongs to another user" in denied.message
