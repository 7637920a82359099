"""Who a program outside the mesh may act for: signed requests and resolutions (ADR 0010).

Each attack is published with the ``external`` login, the one such a program is given,
on a real mesh (real nats-server, real planner and policy, real bpy). The checks are the
planner's for requests and the policy's for resolutions; the server's permissions keep
the login off the doors' subjects, where nothing is checked.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
import nats.errors
import pytest
import pytest_asyncio

from contracts import subjects
from contracts.events import (
    AnyEvent,
    ApprovalRequested,
    ApprovalResolved,
    Denied,
    Planned,
    Resolution,
    RunFailed,
    RunRequested,
    follow,
)
from services.client import build_request, new_id
from services.mesh import Mesh
from services.runtime import users
from services.runtime.access import EXTERNAL
from services.runtime.history import read_run
from services.runtime.host import Bus
from services.runtime.identity import SIGNATURE, SIGNER, sign
from services.runtime.settings import Settings
from tests.meshes import client_mesh, role_bus
from tests.signing import new_seed, register

pytestmark = pytest.mark.asyncio(loop_scope="module")
PREFIX = "bmsigned"
DELETE = {  # destructive: the policy asks a person before it runs
    "operations": [
        {
            "operation_id": "a",
            "tool_name": "object.delete",
            "args": {"name": "Nothing"},
            "depends_on": [],
            "safety_level": "destructive",
        }
    ],
}
CREATE = {
    "operations": [
        {
            "operation_id": "a",
            "tool_name": "object.create",
            "args": {"primitive": "cube", "name": "Signed"},
            "depends_on": [],
            "safety_level": "safe_write",
        }
    ],
}


@dataclass
class Mesh3:
    """The mesh, a door's bus, the external login's bus and the registered users' seeds."""

    running: Mesh
    door: Bus
    external: Bus
    seeds: dict[str, bytes]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def mesh(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Mesh3]:
    settings = Settings(home=tmp_path_factory.mktemp("home"), prefix=PREFIX, planner="plan")
    seeds = {name: register(settings.home, name) for name in ("ana", "ben")}
    seeds["carol"] = register(settings.home, "carol", approver=True)
    async with (
        client_mesh(settings) as (running, door),
        role_bus(running, EXTERNAL) as external,
    ):
        yield Mesh3(running=running, door=door, external=external, seeds=seeds)


def request(user: str, plan: Any = CREATE, scene: str = "signedscene") -> RunRequested:
    """A request of ``user``'s, with a request id of its own (the journal's key)."""
    plan = {**plan, "request_id": new_id("req")}
    return build_request(user=user, scene_id=scene, plan=plan, planner="plan")


async def send(
    bus: Bus,
    event: AnyEvent,
    seed: bytes | None,
    *,
    subject: str | None = None,
    body: bytes | None = None,
    signed_body: bytes | None = None,
) -> None:
    """Publish ``event`` on its signed subject, signed with ``seed`` (None: unsigned).
    ``body`` replaces what is sent, ``signed_body`` what the signature covers."""
    kind = "requested" if isinstance(event, RunRequested) else "approval_resolved"
    assert isinstance(event, RunRequested | ApprovalResolved)
    subject = subject or subjects.signed(PREFIX, event.run_id, kind)
    data = body if body is not None else msgspec.json.encode(event)
    headers = {"Nats-Msg-Id": f"{event.event_id}-{subject}"}
    if seed is not None:
        headers |= sign(seed, subject, signed_body if signed_body is not None else data)
    await bus.js.publish(subject, data, headers=headers, timeout=5)


async def until(
    bus: Bus, run_id: str, done: Callable[[Sequence[AnyEvent]], bool], timeout: float = 60.0
) -> Sequence[AnyEvent]:
    """The run's events once ``done`` holds of them."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        events = await read_run(bus.js, PREFIX, run_id)
        if done(events):
            return events
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"run {run_id} did not get there: {events}")
        await asyncio.sleep(0.1)


def ended(events: Sequence[AnyEvent]) -> bool:
    return any(isinstance(e, RunFailed) for e in events) or any(
        isinstance(e, ApprovalRequested) for e in events
    )


async def refused(mesh: Mesh3, run_id: str) -> RunFailed:
    """The run's only event: the planner's refusal. Nothing was planned."""
    events = await until(mesh.door, run_id, ended)
    assert [type(e) for e in events] == [RunFailed], events
    failed = events[0]
    assert isinstance(failed, RunFailed) and failed.failure.error_code == "POLICY_BLOCKED"
    assert not failed.failure.recoverable
    return failed


async def test_external_login_when_publishing_on_doors_subjects_is_refused(mesh: Mesh3) -> None:
    event = request("ben")
    for kind in ("requested", "approval_resolved"):
        with pytest.raises(nats.errors.TimeoutError):
            await mesh.external.js.publish(
                subjects.run_events(PREFIX, event.run_id, kind),
                msgspec.json.encode(event),
                timeout=2,
            )
    assert await read_run(mesh.door.js, PREFIX, event.run_id) == []


async def test_signed_request_when_valid_runs_as_its_user(mesh: Mesh3) -> None:
    event = request("ana")
    await send(mesh.external, event, mesh.seeds["ana"])
    events = await until(mesh.door, event.run_id, lambda es: any(_done(e) for e in es))
    first = events[0]
    assert isinstance(first, RunRequested) and first.user == "ana"
    assert first.event_id != event.event_id  # the checked copy, under an id of its own
    assert any(isinstance(e, Planned) for e in events)
    assert len([e for e in events if isinstance(e, RunRequested)]) == 1


def _done(event: AnyEvent) -> bool:
    return type(event).__name__ in ("RunCompleted", "RunFailed")


async def test_unsigned_request_when_sent_fails_the_run_without_a_plan(
    mesh: Mesh3, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "blendmesh.security")
    event = request("ben")
    await send(mesh.external, event, None)
    failed = await refused(mesh, event.run_id)
    assert "not signed" in failed.message and SIGNER in failed.message
    assert failed.user == "unverified" and failed.thread_id == event.run_id
    assert any("refused the signed request" in r.getMessage() for r in caplog.records)


async def test_request_signed_by_ana_when_claiming_ben_is_refused(mesh: Mesh3) -> None:
    event = request("ben")
    await send(mesh.external, event, mesh.seeds["ana"])
    failed = await refused(mesh, event.run_id)
    assert "claims user 'ben'" in failed.message and "signs for 'ana'" in failed.message
    assert failed.user == "ana"  # who really sent it, as the signature proves


async def test_request_when_tampered_after_signing_is_refused(mesh: Mesh3) -> None:
    event = request("ana")
    original = msgspec.json.encode(event)
    tampered = msgspec.json.encode(msgspec.structs.replace(event, scene_id="someoneelse"))
    await send(mesh.external, event, mesh.seeds["ana"], body=tampered, signed_body=original)
    failed = await refused(mesh, event.run_id)
    assert "does not match this message" in failed.message


async def test_request_when_signed_by_an_unknown_key_is_refused(mesh: Mesh3) -> None:
    event = request("ana")
    await send(mesh.external, event, new_seed())
    failed = await refused(mesh, event.run_id)
    assert "is not registered" in failed.message and "blendmesh users add" in failed.message


async def test_request_when_signature_is_garbage_is_refused(mesh: Mesh3) -> None:
    event = request("ana")
    subject = subjects.signed(PREFIX, event.run_id, "requested")
    good = sign(mesh.seeds["ana"], subject, msgspec.json.encode(event))
    await mesh.external.js.publish(
        subject,
        msgspec.json.encode(event),
        headers={"Nats-Msg-Id": event.event_id, SIGNER: good[SIGNER], SIGNATURE: "%%%"},
        timeout=5,
    )
    failed = await refused(mesh, event.run_id)
    assert "not base64url" in failed.message


async def test_signature_when_replayed_on_another_run_is_refused(mesh: Mesh3) -> None:
    event, other, third = request("ana"), request("ana"), request("ana")
    body = msgspec.json.encode(event)
    headers = sign(mesh.seeds["ana"], subjects.signed(PREFIX, event.run_id, "requested"), body)
    # The same bytes and signature on another run's subject: the body names its own run.
    await mesh.external.js.publish(
        subjects.signed(PREFIX, other.run_id, "requested"),
        body,
        headers={"Nats-Msg-Id": "replayed", **headers},
        timeout=5,
    )
    failed = await refused(mesh, other.run_id)
    assert f"is for run {event.run_id}" in failed.message
    # The body rewritten for a third run, under the first run's signature.
    moved = msgspec.json.encode(msgspec.structs.replace(event, run_id=third.run_id))
    await mesh.external.js.publish(
        subjects.signed(PREFIX, third.run_id, "requested"),
        moved,
        headers={"Nats-Msg-Id": "moved", **headers},
        timeout=5,
    )
    failed = await refused(mesh, third.run_id)
    assert "does not match this message" in failed.message
    assert await read_run(mesh.door.js, PREFIX, event.run_id) == []


async def test_accepted_request_when_replayed_later_starts_nothing_new(mesh: Mesh3) -> None:
    event = request("ana")
    await send(mesh.external, event, mesh.seeds["ana"])
    await until(mesh.door, event.run_id, lambda es: any(_done(e) for e in es))
    # The same signed message again, under a new Nats-Msg-Id (past the duplicate window).
    subject = subjects.signed(PREFIX, event.run_id, "requested")
    body = msgspec.json.encode(event)
    headers = {"Nats-Msg-Id": "again", **sign(mesh.seeds["ana"], subject, body)}
    await mesh.external.js.publish(subject, body, headers=headers, timeout=5)
    # A later run is planned after it, so the planner has read the replay by then.
    later = request("ana")
    await send(mesh.external, later, mesh.seeds["ana"])
    await until(mesh.door, later.run_id, lambda es: any(_done(e) for e in es))
    events = await read_run(mesh.door.js, PREFIX, event.run_id)
    assert len([e for e in events if isinstance(e, RunRequested)]) == 1
    assert len([e for e in events if _done(e)]) == 1


async def pending(mesh: Mesh3, user: str = "ana") -> ApprovalRequested:
    """A run of ``user``'s, asked for with their own key, waiting on a person."""
    event = request(user, DELETE, scene=f"approvals-{user}")
    await send(mesh.external, event, mesh.seeds[user])
    events = await until(mesh.door, event.run_id, ended)
    asked = events[-1]
    assert isinstance(asked, ApprovalRequested), events
    return asked


def resolution(asked: ApprovalRequested, by: str, decision: Resolution) -> ApprovalResolved:
    """An answer to ``asked``, with a fresh id: signed messages never share a message id."""
    answer = follow(
        asked,
        ApprovalResolved,
        asked.at,
        approval_id=asked.approval_id,
        decision=decision,
        resolved_by=by,
        request_hash=asked.request_hash,
    )
    return msgspec.structs.replace(answer, event_id=str(uuid.uuid4()))


async def test_resolution_when_resolver_may_not_resolve_leaves_approval_pending(
    mesh: Mesh3, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "blendmesh.security")
    asked = await pending(mesh)
    await send(mesh.external, resolution(asked, "ben", "approve_once"), mesh.seeds["ben"])
    await send(mesh.external, resolution(asked, "ana", "approve_once"), None)  # unsigned
    forged = resolution(asked, "ana", "approve_once")  # ben's key, claiming ana
    await send(mesh.external, forged, mesh.seeds["ben"])
    # Carol is an approver: her rejection is the first resolution the run gets.
    await send(mesh.external, resolution(asked, "carol", "reject"), mesh.seeds["carol"])
    events = await until(mesh.door, asked.run_id, lambda es: any(_done(e) for e in es))
    resolved = [e for e in events if isinstance(e, ApprovalResolved)]
    assert [(r.resolved_by, r.decision) for r in resolved] == [("carol", "reject")]
    denied = next(e for e in events if isinstance(e, Denied))
    assert denied.failure.error_code == "APPROVAL_REJECTED"
    logged = [r.getMessage() for r in caplog.records if "signed resolution" in r.getMessage()]
    assert any("'ben' may not resolve approvals of 'ana'" in m for m in logged)
    assert any("not signed" in m for m in logged)
    assert any("claims resolved_by 'ana'" in m for m in logged)


async def test_resolution_when_signed_by_the_runs_user_resumes_the_run(mesh: Mesh3) -> None:
    asked = await pending(mesh, "ben")
    await send(mesh.external, resolution(asked, "ben", "reject"), mesh.seeds["ben"])
    events = await until(mesh.door, asked.run_id, lambda es: any(_done(e) for e in es))
    resolved = [e for e in events if isinstance(e, ApprovalResolved)]
    assert [(r.resolved_by, r.decision) for r in resolved] == [("ben", "reject")]


async def test_resolution_when_replayed_on_another_run_is_refused(mesh: Mesh3) -> None:
    first = await pending(mesh)
    second = await pending(mesh)
    answer = resolution(first, "ana", "reject")
    body = msgspec.json.encode(answer)
    headers = sign(
        mesh.seeds["ana"], subjects.signed(PREFIX, first.run_id, "approval_resolved"), body
    )
    moved = msgspec.json.encode(msgspec.structs.replace(answer, run_id=second.run_id))
    await mesh.external.js.publish(
        subjects.signed(PREFIX, second.run_id, "approval_resolved"),
        moved,
        headers={"Nats-Msg-Id": "moved-resolution", **headers},
        timeout=5,
    )
    # Then the first run's own answer: once it is handled, the replay was read before it.
    await send(mesh.external, answer, mesh.seeds["ana"])
    await until(mesh.door, first.run_id, lambda es: any(_done(e) for e in es))
    events = await read_run(mesh.door.js, PREFIX, second.run_id)
    assert not any(isinstance(e, ApprovalResolved) for e in events)
    assert isinstance(events[-1], ApprovalRequested)  # still waiting on a person


async def test_signed_request_when_unreadable_fails_its_run(mesh: Mesh3) -> None:
    run_id = new_id("run")
    bad = {"type": "run.requested", "event_id": new_id("e"), "at": 1.0, "run_id": run_id}
    bad |= {"request_id": "r", "thread_id": "t", "user": "ben", "scene_id": 42}
    await mesh.external.js.publish(
        subjects.signed(PREFIX, run_id, "requested"),
        msgspec.json.encode(bad),
        headers={"Nats-Msg-Id": bad["event_id"]},
        timeout=5,
    )
    events = await until(mesh.door, run_id, ended)
    assert [type(e) for e in events] == [RunFailed]
    failed = events[0]
    assert isinstance(failed, RunFailed) and failed.failure.error_code == "REQUEST_UNREADABLE"
    assert "scene_id" in failed.message and failed.user == "unverified"


async def test_signed_request_when_registry_is_broken_is_refused(mesh: Mesh3) -> None:
    path = mesh.running.settings.home / users.FILE_NAME
    kept = path.read_bytes()
    path.write_text("users = [")
    try:
        event = request("ana")
        await send(mesh.external, event, mesh.seeds["ana"])
        failed = await refused(mesh, event.run_id)
    finally:
        path.write_bytes(kept)
    assert "user registry cannot be read" in failed.message
    assert "users = [" not in failed.message  # the file's content stays in the mesh's log
