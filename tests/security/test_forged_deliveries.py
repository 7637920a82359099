"""A push consumer delivers wherever its creator aims it, and nats-server does not check
that subject against the creator's permissions. So every reader checks what it is
delivered (docs/adr/0015): the doors' owner index applies only the log's own subjects and
lets no later event take over an approval, and the responders never act on a stream's
delivery. Each test aims such a consumer (as admin, who alone may now make one that
reaches these subjects) at a reader on a real server and checks that nothing changed."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from nats.js.api import AckPolicy, ConsumerConfig

from contracts import subjects
from contracts.allowlist import AllowlistEntry
from contracts.events import ApprovalRequested, RunRequested, encode_event
from services.doors.cli.mesh import Mesh
from services.policy.allowlist import AllowlistResponders, KvAllowlist
from services.runtime.nats import access
from services.runtime.nats.delivered import from_stream
from services.runtime.service.owners import LogOwners
from services.runtime.service.settings import Settings
from tests.support.meshes import bare_mesh_fixture, role_bus

pytestmark = pytest.mark.integration

PREFIX = "bmforge"
STREAM = subjects.stream_name(PREFIX)


@pytest.fixture
def mesh_settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home", prefix=PREFIX)


# A mesh per test: each leaves an admin's consumer aimed at a reader (and the policy's
# allowlist holding an entry), which the next test's reader must not inherit.
mesh = bare_mesh_fixture("function")


def alice_requested(run_id: str) -> RunRequested:
    return RunRequested(
        event_id=f"e-{run_id}",
        at=1.0,
        run_id=run_id,
        request_id="req",
        thread_id=f"t-{run_id}",
        user="alice",
        scene_id="alicescene",
        prompt="delete the box",
    )


def asked(run_id: str, user: str) -> ApprovalRequested:
    return ApprovalRequested(
        event_id=f"a-{run_id}-{user}",
        at=2.0,
        run_id=run_id,
        request_id="req",
        thread_id=f"t-{run_id}",
        user=user,
        approval_id="appr-1",
        operations=[],
        operation_ids=[],
        reason="destructive",
        request_hash="sha256:x",
    )


async def aim(mesh: Mesh, filter_subject: str, deliver: str, group: str | None = None) -> None:
    async with role_bus(mesh, access.ADMIN) as admin:
        await admin.js.add_consumer(
            STREAM,
            ConsumerConfig(
                name=f"aimed-{abs(hash((filter_subject, deliver))) % 10**8}",
                deliver_subject=deliver,
                deliver_group=group,
                filter_subject=filter_subject,
                ack_policy=AckPolicy.NONE,
            ),
        )


async def test_owner_index_when_a_forged_approval_is_pushed_into_its_inbox_keeps_the_owner(
    mesh: Mesh,
) -> None:
    async with (
        role_bus(mesh, access.CLIENT) as client,
        role_bus(mesh, "policy") as policy,
        role_bus(mesh, access.ADMIN) as admin,
    ):
        await client.publisher.publish(alice_requested("arun"))
        await policy.publisher.publish(asked("arun", "alice"))
        owners = LogOwners(client)
        try:
            assert (await owners.current()).approvals["appr-1"].user == "alice"
            # bob's copy of her approval: once on a subject outside the run's, once on
            # another run's own subject, both carrying her approval id.
            forged = encode_event(asked("arun", "bob"))
            await admin.js.publish(f"{PREFIX}.signed.x.requested", forged)
            await policy.publisher.publish(asked("brun", "bob"))
            inbox = owners.tail.inbox(subjects.any_run(PREFIX, "approval_requested"))
            await aim(mesh, f"{PREFIX}.signed.>", inbox)
            await asyncio.sleep(1.0)
            index = await owners.current()
            assert index.approvals["appr-1"].user == "alice"
            assert index.approvals["appr-1"].run_id == "arun"
        finally:
            await owners.close()


async def test_policy_responder_when_a_stream_delivers_a_revoke_into_its_queue_ignores_it(
    mesh: Mesh,
) -> None:
    async with role_bus(mesh, "policy") as policy, role_bus(mesh, access.ADMIN) as admin:
        allowlist = KvAllowlist(policy.js, PREFIX)
        entry = AllowlistEntry(
            entry_id="e1",
            user="alice",
            tool="object.delete",
            scene_id="s",
            created_at=1.0,
            created_by="alice",
            run_id="r",
        )
        await allowlist.add(entry)
        responders = AllowlistResponders(policy.nc, PREFIX, allowlist, policy.publisher)
        await responders.start()
        try:
            bait = subjects.run_events(PREFIX, "bait", "requested")
            body = json.dumps({"entry_id": "e1"}).encode()
            await admin.js.publish(bait, body)
            await aim(mesh, bait, subjects.query(PREFIX, "allowlist.revoke"), group="policy")
            await asyncio.sleep(1.5)
            assert [e.entry_id for e in await allowlist.entries("alice")] == ["e1"]
        finally:
            await responders.stop()


@pytest.mark.parametrize(
    ("reply", "headers", "expected"),
    [
        ("$JS.ACK.BM_EVENTS.c.1.2.3.4.0", None, True),
        ("_INBOX.client.abc", {"Nats-Stream": "BM_EVENTS", "Nats-Sequence": "4"}, True),
        ("_INBOX.client.abc", None, False),
        (None, None, False),
    ],
)
def test_from_stream_when_a_delivery_carries_a_streams_marks_says_so(
    reply: str | None, headers: dict[str, str] | None, expected: bool
) -> None:
    assert from_stream(reply, headers) is expected


async def test_responders_when_the_reply_subject_is_not_an_inbox_answer_nothing(
    mesh: Mesh,
) -> None:
    """With allow_responses a responder may publish wherever a request's reply points: a
    client could aim the policy's answer at the log. Only inboxes are answered."""
    async with role_bus(mesh, "policy") as policy, role_bus(mesh, access.CLIENT) as client:
        allowlist = KvAllowlist(policy.js, PREFIX)
        responders = AllowlistResponders(policy.nc, PREFIX, allowlist, policy.publisher)
        await responders.start()
        try:
            target = subjects.run_events(PREFIX, "aimed", "approved")
            await client.nc.publish(subjects.query(PREFIX, "allowlist.list"), b"{}", reply=target)
            await client.nc.flush()
            await asyncio.sleep(1.0)
            info = await client.js.stream_info(STREAM, subjects_filter=target)
            assert not info.state.subjects  # nothing landed on the run's subject
            answer = await client.nc.request(subjects.query(PREFIX, "allowlist.list"), b"{}")
            assert json.loads(answer.data)["ok"] is True  # an inbox is answered as before
        finally:
            await responders.stop()


@pytest.mark.parametrize(
    ("reply", "expected"),
    [("_INBOX.client.x", True), ("bmforge.run.x.approved", False), ("$JS.ACK.S.c.1", False)],
)
def test_answerable_when_the_reply_is_an_inbox_only_says_yes(reply: str, expected: bool) -> None:
    from services.runtime.nats.delivered import answerable

    assert answerable(reply, None) is expected
