"""The mesh on a three-node JetStream cluster keeps its promises when a server dies.

Every stream, bucket and object store has three copies (``BLENDMESH_REPLICAS=3``). The
server that leads the event log is killed with SIGKILL in the middle of a run: the run
completes, nothing the log acknowledged before is lost, the scene ends as an
uninterrupted run leaves it, and no operation is applied twice.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from nats.js.api import DeliverPolicy

from contracts import subjects
from contracts.events import AnyEvent, OperationStarted, OperationSucceeded
from contracts.queries import RunDetail
from services.audit import client as audit
from services.doors.core.client import MeshClient
from services.doors.core.requests import build_request
from services.executor.adapters.kv_journal import KvJournal
from services.executor.domain.journal import op_key
from services.runtime.nats import access
from services.runtime.nats.history import read_run
from services.runtime.server.embedded import prepare_streams
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings
from tests.support.clusters import NatsCluster, stream_leader
from tests.support.meshes import client_mesh

pytestmark = pytest.mark.slow

PREFIX = "bmchaos"
STREAM = subjects.stream_name(PREFIX)
OPERATIONS = 200  # about a second of work: the run's events go out in batches of 0.25 s


def plan(request_id: str) -> dict[str, Any]:
    """Four objects created, then moved in turn: ``OPERATIONS`` operations in a chain."""
    ops: list[dict[str, Any]] = []
    for i in range(OPERATIONS):
        name = f"Piece{i % 4}"
        if i < 4:
            tool, args = "object.create", {"primitive": "cube", "name": name}
        else:
            tool = "object.transform"
            args = {"name": name, "location": [i * 0.25, i % 5, 0.0], "rotation": [0, 0, i]}
        ops.append(
            {
                "operation_id": f"op{i:03d}",
                "tool_name": tool,
                "args": args,
                "depends_on": [f"op{i - 1:03d}"] if i else [],
                "safety_level": "safe_write",
            }
        )
    return {"request_id": request_id, "operations": ops}


async def log_ids(bus: Bus) -> dict[int, str]:
    """Every message of the event log: stream sequence -> ``Nats-Msg-Id`` (the event id)."""
    info = await bus.js.stream_info(STREAM)
    ids: dict[int, str] = {}
    sub = await bus.js.subscribe(
        f"{PREFIX}.>", ordered_consumer=True, deliver_policy=DeliverPolicy.ALL, stream=STREAM
    )
    try:
        while len(ids) < info.state.messages:
            msg = await sub.next_msg(timeout=10)
            ids[msg.metadata.sequence.stream] = (msg.headers or {}).get("Nats-Msg-Id", "")
    finally:
        await sub.unsubscribe()
    return ids


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[NatsCluster]:
    nodes = NatsCluster(tmp_path / "cluster", tmp_path / "home" / "nats-credentials.json", PREFIX)
    await nodes.start()
    try:
        yield nodes
    finally:
        await nodes.stop()


async def test_mesh_when_event_log_leader_killed_midway_completes_each_operation_once(
    cluster: NatsCluster, tmp_path: Path
) -> None:
    settings = Settings(
        home=tmp_path / "home",
        nats_url=cluster.url,  # all three servers: a client of the dead one moves on
        prefix=PREFIX,
        user="ana",
        replicas=3,
        ack_wait=5.0,
        previews=False,
    )
    admin = access.login_for(settings.credentials_path, access.ADMIN)
    await prepare_streams(cluster.url, PREFIX, admin, settings.replicas)
    async with client_mesh(settings) as (_, bus):
        info = await bus.js.stream_info(STREAM)
        assert info.config.num_replicas == 3
        for store in ("KV_bmchaos_journal", "KV_bmchaos_leases", "OBJ_bmchaos_scenes"):
            assert (await bus.js.stream_info(store)).config.num_replicas == 3, store

        client = MeshClient(bus)
        reference = await client.run(
            build_request(user="ana", scene_id="calm", plan=plan("calm-1")), timeout=60
        )
        assert reference.status == "completed", reference.message

        # Read before the run: under load, reading the log and asking for the leader once
        # op004 had started took longer than the rest of the run, so the kill landed at
        # its end. The kill itself is a signal, sent as op004's start is heard.
        before = await log_ids(bus)
        leader = await stream_leader(bus.js, STREAM)
        killed: list[str] = []
        heard_before_kill: list[str] = []  # the run's events the log had acknowledged

        def on_event(event: AnyEvent) -> None:
            if not killed:
                heard_before_kill.append(event.event_id)
            if isinstance(event, OperationStarted) and event.operation_id == "op004" and not killed:
                cluster.kill(leader)
                killed.append(leader)

        request = build_request(user="ana", scene_id="storm", plan=plan("storm-1"))
        result = await client.run(request, on_event, timeout=90)
        assert killed, "no server was killed"
        assert result.status == "completed", result.message
        assert result.scene_hash == reference.scene_hash
        assert len(result.receipts) == OPERATIONS
        assert {r.status for r in result.receipts} == {"succeeded"}

        after = await log_ids(bus)
        assert killed[0] != await stream_leader(bus.js, STREAM)
        assert {seq: after.get(seq) for seq in before} == before, "acknowledged events lost"
        assert set(heard_before_kill) <= set(after.values()), "the run's acknowledged events lost"

        events = await read_run(bus.js, PREFIX, result.run_id)
        succeeded = [e for e in events if isinstance(e, OperationSucceeded)]
        # The run was in its middle: many of its steps were stored after the last event
        # the client had heard from the old leader (events leave in batches of 0.25 s, so
        # hearing op004 start says little of how far the executor was).
        seq_of = {event_id: seq for seq, event_id in after.items()}
        last_heard = max(seq_of[i] for i in heard_before_kill)
        later = [e for e in succeeded if seq_of[e.event_id] > last_heard]
        assert len(later) >= OPERATIONS // 4, f"only {len(later)} steps stored after the kill"
        assert Counter(e.operation_id for e in succeeded) == Counter(
            r.operation_id for r in result.receipts
        )
        assert len({e.event_id for e in succeeded}) == OPERATIONS
        journal = KvJournal(bus.js, PREFIX)
        for event in succeeded:
            entry = await journal.get(op_key("ana", "storm", "storm-1", event.operation_id))
            assert entry is not None and entry.run_id == result.run_id, event.operation_id
            assert entry.receipt.blender_mutation_id == event.blender_mutation_id
        detail = await audited(bus, result.run_id)
        committed = Counter(r.operation_id for r in detail.audit_records if r.status == "succeeded")
        assert set(committed) == {r.operation_id for r in result.receipts}
        assert max(committed.values()) == 1


async def audited(bus: Bus, run_id: str, wait: float = 60.0) -> RunDetail:
    """The run's audit views, once the audit service has caught up with the log: after a
    leader is killed its consumer's leader is elected anew, and the views answer "retry in
    a few seconds" until then."""
    deadline = asyncio.get_running_loop().time() + wait
    while True:
        try:
            return await audit.query_run(bus.nc, PREFIX, run_id)
        except audit.AuditError as exc:
            if "behind the event log" not in str(exc):
                raise
            if asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.5)
