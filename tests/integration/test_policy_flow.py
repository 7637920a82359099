"""Policy and approvals through the whole mesh: standing approvals and their revocation on
the log, expiry on the wall clock. Unsafe arguments run on both buses in tests/flows."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from contracts import subjects
from contracts.events import AllowlistRevoked, PolicyDecided, RunFailed
from contracts.receipts import RunResult
from services.doors.cli.mesh import Mesh
from services.doors.core.client import MeshClient, RequestMismatch
from services.doors.core.requests import build_request
from services.policy import client as allowlist
from services.runtime.nats.history import read_run, read_subject
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.meshes import mesh_fixture

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]

TTL = 3.0  # long enough to answer an approval (in well under a second), short enough to
# watch one expire


@pytest.fixture(scope="module")
def mesh_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(
        home=tmp_path_factory.mktemp("home"),
        prefix="bmpolicy",
        user="ana",
        approval_ttl=TTL,
        # No picture is looked at here: a Blender rendering every commit would only
        # compete with the runs for the CPU, and a stop would wait for its last render.
        previews=False,
    )


mesh = mesh_fixture()


async def run(
    mesh: tuple[Mesh, Bus], scene: str, prompt: str | None = None, **kw: Any
) -> RunResult:
    request = build_request(user="ana", scene_id=scene, prompt=prompt, **kw)
    return await MeshClient(mesh[1]).run(request, timeout=120)


async def decided(mesh: tuple[Mesh, Bus], run_id: str) -> PolicyDecided:
    events = await read_run(mesh[1].js, mesh[1].prefix, run_id)
    return next(e for e in events if isinstance(e, PolicyDecided))


@pytest.mark.clause("002-§approvals.5", "002-§policy.3", "002-§audit.9")
async def test_approve_and_always_allow_when_same_op_again_runs_without_asking(
    mesh: tuple[Mesh, Bus],
) -> None:
    bus = mesh[1]
    await run(mesh, "standing", "add a cube named A, add a cube named B, add a cube named C")
    asked = await run(mesh, "standing", "delete A")
    assert asked.status == "awaiting_confirmation"
    client = MeshClient(bus)
    stale = f"run {asked.run_id} waits on a different request than the one answered; look"
    with pytest.raises(RequestMismatch, match=stale):
        await client.resolve(asked.run_id, "approve_once", "ana", request_hash="sha256:0")
    done = await client.resolve(asked.run_id, "approve_and_always_allow", "ana", timeout=120)
    assert done.status == "completed", done

    again = await run(mesh, "standing", "delete B")
    assert again.status == "completed", again
    (entry,) = await allowlist.list_entries(bus.nc, bus.prefix, "ana")
    assert (entry.tool, entry.scene_id) == ("object.delete", "standing")
    assert (await decided(mesh, again.run_id)).decisions[0].policy_ids == [
        f"allowlist#{entry.entry_id}"
    ]

    revoked = await allowlist.revoke_entry(bus.nc, bus.prefix, entry.entry_id, revoked_by="ana")
    assert revoked.entry_id == entry.entry_id
    assert await allowlist.list_entries(bus.nc, bus.prefix, "ana") == []
    # 002 §9: the revocation is an immutable entry of the log, not only a KV delete.
    subject = subjects.scene_events(bus.prefix, "standing", "allowlist_revoked")
    (record,) = await read_subject(bus.js, bus.prefix, subject)
    assert isinstance(record, AllowlistRevoked)
    assert (record.entry, record.revoked_by) == (entry, "ana")
    asked_again = await run(mesh, "standing", "delete C")
    assert asked_again.status == "awaiting_confirmation"
    await client.resolve(asked_again.run_id, "reject", "ana", timeout=120)


async def test_approval_when_nobody_answers_expires_and_fails_the_run(
    mesh: tuple[Mesh, Bus],
) -> None:
    await run(mesh, "expiring", "add a cube named Old")
    asked = await run(mesh, "expiring", "delete Old")
    assert asked.status == "awaiting_confirmation"
    bus = mesh[1]
    deadline = asyncio.get_running_loop().time() + TTL + 60
    failed = None
    while failed is None and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.5)
        events = await read_run(bus.js, bus.prefix, asked.run_id)
        failed = next((e for e in events if isinstance(e, RunFailed)), None)
    assert failed is not None, "the approval never expired"
    assert failed.failure.error_code == "APPROVAL_EXPIRED"
