"""Crash safety with real processes: executors killed with SIGKILL, a bridge killed in the
middle of an operation, nats-server restarted under a run, garbage on an executor subject."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from contracts import subjects
from contracts.events import AnyEvent, DeadLettered, Executed, OperationStarted, decode_event
from services.audit import client as audit
from services.doors.cli.mesh import Mesh
from services.doors.core.client import MeshClient
from services.doors.core.requests import build_request
from services.executor.adapters.supervisor import SupervisedBridge
from services.executor.domain.ports import Lease
from services.runtime.nats.streams import ensure_kv
from services.runtime.server.embedded import EmbeddedNats
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings

PREFIX = "bmcrash"
ROOT = Path(__file__).resolve().parents[2]


def transforms(request_id: str, count: int) -> dict[str, Any]:
    """Create an object, then move it ``count`` times: long enough to be killed midway."""
    ops = [
        {
            "operation_id": "op0000",
            "tool_name": "object.create",
            "args": {"primitive": "monkey", "name": "Victim"},
            "depends_on": [],
            "safety_level": "safe_write",
        }
    ]
    for i in range(1, count + 1):
        ops.append(
            {
                "operation_id": f"op{i:04d}",
                "tool_name": "object.transform",
                "args": {
                    "name": "Victim",
                    "location": [i * 0.5, i % 7, 0.0],
                    "rotation": [0.0, 0.0, float(i % 360)],
                },
                "depends_on": [f"op{i - 1:04d}"],
                "safety_level": "safe_write",
            }
        )
    return {"request_id": request_id, "operations": ops}


class Cluster:
    """nats-server and the light services in this process; executors as child processes."""

    def __init__(self, home: Path, bridges: int = 1) -> None:
        self.home = home
        self.bridges = bridges  # each executor's pool (ADR 0070)
        self.server = EmbeddedNats(home / "nats")
        self.executors: list[subprocess.Popen[bytes]] = []

    async def start(self, executors: int) -> None:
        self.url = await self.server.start()
        self.settings = Settings(
            home=self.home,
            nats_url=self.url,
            prefix=PREFIX,
            user="ana",
            ack_wait=2.0,
            lease_ttl=2.0,
            previews=False,
        )
        self.mesh = Mesh(self.settings, services=("audit", "planner", "policy", "guardians"))
        await self.mesh.start()
        self.bus = await Bus.open(self.url, PREFIX, "test")
        for _ in range(executors):
            self.spawn_executor()
        await self.wait_for_executors(executors * self.bridges)

    def spawn_executor(self) -> None:
        env = {
            **os.environ,
            "NATS_URL": self.url,
            "BLENDMESH_PREFIX": PREFIX,
            "BLENDMESH_HOME": str(self.home),
            "BLENDMESH_ACK_WAIT": "2",
            "BLENDMESH_LEASE_TTL": "2",
            # The waits count one pull per lane of each executor process.
            "BLENDMESH_BRIDGES": str(self.bridges),
            "PYTHONPATH": str(ROOT),
        }
        self.executors.append(
            subprocess.Popen(
                [sys.executable, "-m", "services.executor"],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )

    async def wait_for_executors(self, count: int) -> None:
        stream = subjects.stream_name(PREFIX)
        for _ in range(300):
            try:
                info = await self.bus.js.consumer_info(stream, "executor")
                if info.num_waiting >= count:
                    return
            except Exception:  # noqa: BLE001 - the consumer appears with the first executor
                pass
            await asyncio.sleep(0.1)
        raise AssertionError(f"{count} executors did not start")

    async def lease_holder_pid(self, scene: str) -> int:
        kv = await ensure_kv(self.bus.js, PREFIX, "leases")
        lease = msgspec.json.decode((await kv.get(scene)).value or b"", type=Lease)
        return int(lease.owner.split(":")[1])

    async def stop(self) -> None:
        for proc in self.executors:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.executors:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        await self.bus.close()
        await self.mesh.stop()
        await self.server.stop()


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    c = Cluster(tmp_path)
    try:
        yield c
    finally:
        await c.stop()


async def test_pool_executor_killed_with_two_runs_when_another_finishes_each_once(
    tmp_path: Path,
) -> None:
    """Two users' runs under way on the one executor's two lanes when it is killed: the
    executor started in its place finishes both, and no operation of either is applied
    twice."""
    cluster = Cluster(tmp_path, bridges=2)
    try:
        await cluster.start(executors=1)
        client = MeshClient(cluster.bus)
        reference = await client.run(
            build_request(user="ana", scene_id="ref", plan=transforms("ref-1", 120)),
            timeout=120,
        )
        assert reference.status == "completed"
        killed: list[int] = []
        started: dict[str, asyncio.Event] = {"pa": asyncio.Event(), "pb": asyncio.Event()}

        def heard(scene: str) -> Callable[[AnyEvent], None]:
            def on_event(event: AnyEvent) -> None:
                if isinstance(event, OperationStarted) and event.operation_id == "op0030":
                    started[scene].set()

            return on_event

        async def kill_when_both_run() -> None:
            await asyncio.gather(*(e.wait() for e in started.values()))
            pid = await cluster.lease_holder_pid("pa")
            assert await cluster.lease_holder_pid("pb") == pid  # both on its two lanes
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
            cluster.spawn_executor()

        killer = asyncio.create_task(kill_when_both_run())
        results = await asyncio.gather(
            *(
                client.run(
                    build_request(user=user, scene_id=scene, plan=transforms(f"{scene}-1", 120)),
                    heard(scene),
                    timeout=180,
                )
                for user, scene in (("ana", "pa"), ("bo", "pb"))
            )
        )
        await killer
        assert killed, "the executor was not killed"
        for result in results:
            assert result.status == "completed", result.message
            assert result.scene_hash == reference.scene_hash
            detail = await audit.query_run(cluster.bus.nc, PREFIX, result.run_id)
            committed = Counter(
                r.operation_id for r in detail.audit_records if r.status == "succeeded"
            )
            assert set(committed) == {r.operation_id for r in result.receipts}
            assert max(committed.values()) == 1
    finally:
        await cluster.stop()


async def test_executor_killed_midway_when_another_finishes_each_mutation_once(
    cluster: Cluster,
) -> None:
    await cluster.start(executors=2)
    client = MeshClient(cluster.bus)
    reference = await client.run(
        build_request(user="ana", scene_id="ref", plan=transforms("ref-1", 120)), timeout=120
    )
    assert reference.status == "completed"

    killed: list[int] = []

    async def kill_holder() -> None:
        pid = await cluster.lease_holder_pid("crash")
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)

    tasks: list[asyncio.Task[None]] = []

    def on_event(event: AnyEvent) -> None:
        if isinstance(event, OperationStarted) and event.operation_id == "op0030" and not tasks:
            tasks.append(asyncio.get_running_loop().create_task(kill_holder()))

    request = build_request(user="ana", scene_id="crash", plan=transforms("crash-1", 120))
    result = await client.run(request, on_event, timeout=120)
    assert killed, "the executor was not killed"
    assert result.status == "completed", result.message
    assert result.scene_hash == reference.scene_hash
    assert len(result.receipts) == 121 and {r.status for r in result.receipts} == {"succeeded"}
    detail = await audit.query_run(cluster.bus.nc, PREFIX, result.run_id)
    committed = Counter(r.operation_id for r in detail.audit_records if r.status == "succeeded")
    assert set(committed) == {r.operation_id for r in result.receipts}
    assert max(committed.values()) == 1
    mutation_ids = [r.blender_mutation_id for r in result.receipts]
    assert len(set(mutation_ids)) == len(mutation_ids)


def bridge_pids() -> list[int]:
    """Bridge processes that are children of this test process and run plans (the
    preview worker's bridge runs at a lower CPU priority)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if b"services.bridge" not in cmdline or ppid != os.getpid():
            continue
        with contextlib.suppress(OSError):
            if os.getpriority(os.PRIO_PROCESS, int(entry.name)) == os.getpriority(
                os.PRIO_PROCESS, 0
            ):
                pids.append(int(entry.name))
    return pids


async def test_bridge_killed_midway_when_executor_restores_and_serves_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    killed: list[int] = []
    call_tool = SupervisedBridge.call_tool

    async def kill_first(self: SupervisedBridge, name: str, arguments: Any, *a: Any) -> Any:
        # Blender is killed just before the run's last call, which adds an object: the
        # call then meets a dead bridge or, when the watcher was quicker, a new Blender
        # with an empty scene, where it succeeds. Either way the run must not go on as if
        # its scene were still there, and commit a scene without Victim.
        if arguments.get("name") == "Late" and not killed:
            proc = self._proc
            assert proc.pid is not None and proc.pid in bridge_pids()
            os.kill(proc.pid, signal.SIGKILL)
            killed.append(proc.pid)
            await proc.exited()
        return await call_tool(self, name, arguments, *a)

    monkeypatch.setattr(SupervisedBridge, "call_tool", kill_first)
    settings = Settings(home=tmp_path, prefix=PREFIX, user="ana", previews=False)
    async with Mesh(settings) as mesh:
        bus = await Bus.open(mesh.url, PREFIX, "test", mesh.login("client"))
        client = MeshClient(bus)
        before = bridge_pids()
        assert len(before) == 1
        plan = transforms("bridge-1", 20)
        late = {"primitive": "cube", "name": "Late"}
        plan["operations"].append(
            {**plan["operations"][0], "operation_id": "op0021", "args": late, "depends_on": []}
        )
        result = await client.run(build_request(user="ana", scene_id="b", plan=plan), timeout=120)
        assert killed == before
        assert result.status == "failed" and result.failure is not None
        assert set(msgspec.to_builtins(result.failure)) == {
            "error_code",
            "recoverable",
            "retry_hint",
            "minimal_repair_plan",
        }
        failed = next(r for r in result.receipts if r.status == "rolled_back")
        assert failed.scene_hash_after == failed.scene_hash_before == result.scene_hash
        assert bridge_pids() != before  # a new bridge serves the executor
        follow_up = await client.run(
            build_request(user="ana", scene_id="b", prompt="move Victim to 9 9 9"), timeout=120
        )
        assert follow_up.status == "completed"
        assert follow_up.receipts[0].scene_hash_before == result.scene_hash
        await bus.close()


async def test_malformed_executor_message_when_dead_lettered_next_run_unaffected(
    tmp_path: Path,
) -> None:
    settings = Settings(home=tmp_path, prefix=PREFIX, user="ana", previews=False)
    async with Mesh(settings) as mesh:
        # Only the policy service may write ``approved``: this is a policy bug's message.
        buggy = await Bus.open(mesh.url, PREFIX, "buggy-policy", mesh.login("policy"))
        await buggy.js.publish(subjects.run_events(PREFIX, "junk", "approved"), b"\x00not json")
        await buggy.close()
        bus = await Bus.open(mesh.url, PREFIX, "test", mesh.login("client"))
        result = await MeshClient(bus).run(
            build_request(user="ana", scene_id="ok", prompt="add a cube named Fine"), timeout=120
        )
        assert result.status == "completed"
        sub = await bus.js.subscribe(subjects.deadletter(PREFIX, "executor"), ordered_consumer=True)
        letter = decode_event((await sub.next_msg(timeout=10)).data)
        await sub.unsubscribe()
        assert isinstance(letter, DeadLettered) and letter.reason.startswith("undecodable")
        assert letter.subject == subjects.run_events(PREFIX, "junk", "approved")
        await bus.close()


async def _poll_result(bus: Bus, run_id: str, timeout: float) -> Any:
    """Fold the run from the log until it ends, riding out a server restart."""
    from contracts.fold import fold_run, is_terminal
    from services.runtime.nats.history import read_run

    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        try:
            result = fold_run(await read_run(bus.js, PREFIX, run_id))
            if result is not None and is_terminal(result):
                return result
        except Exception:  # noqa: BLE001 - the server is restarting: ask again
            pass
        await asyncio.sleep(0.2)
    raise AssertionError(f"run {run_id} did not finish")


@pytest.mark.slow
async def test_nats_restart_during_run_when_services_reconnect_nothing_acked_is_lost(
    tmp_path: Path,
) -> None:
    server = EmbeddedNats(tmp_path / "nats")
    url = await server.start()
    port = int(url.rsplit(":", 1)[1])
    settings = Settings(
        home=tmp_path, nats_url=url, prefix=PREFIX, user="ana", ack_wait=3.0, previews=False
    )
    mesh = Mesh(settings)
    await mesh.start()
    bus = await Bus.open(url, PREFIX, "test")
    acked: list[int] = []
    try:
        request = build_request(user="ana", scene_id="r", plan=transforms("restart-1", 150))
        await bus.publisher.publish(request)
        for _ in range(1000):  # until the run is well under way
            events = await _history(bus, request.run_id)
            if any(isinstance(e, OperationStarted) and e.operation_id == "op0030" for e in events):
                break
            await asyncio.sleep(0.02)

        async def probe() -> None:
            """Publish while the server goes down and up; remember what was acknowledged."""
            for i in range(200):
                try:
                    ack = await bus.js.publish(
                        f"{PREFIX}.deadletter.probe", f"{i}".encode(), timeout=0.5
                    )
                    acked.append(ack.seq)
                except Exception:  # noqa: BLE001 - unacknowledged: allowed to be lost
                    pass
                await asyncio.sleep(0.01)

        probing = asyncio.create_task(probe())
        await server.stop()
        await asyncio.sleep(0.5)
        server = EmbeddedNats(tmp_path / "nats", port=port)
        await server.start()
        await probing
        result = await _poll_result(bus, request.run_id, timeout=120)
        trace = _trace(await _history(bus, request.run_id))
        assert result.status == "completed", (result.message, trace)
        assert len(result.receipts) == 151, trace
        stream = subjects.stream_name(PREFIX)
        for seq in acked:
            msg = await bus.js.get_msg(stream, seq)
            assert msg.subject == f"{PREFIX}.deadletter.probe"
        assert len(acked) > 10
    finally:
        await bus.close()
        await mesh.stop()
        await server.stop()


def _trace(events: list[AnyEvent]) -> str:
    """The run's events in log order, one short token each, for a failure message."""
    out = []
    for e in events:
        kind = type(e).__name__
        op = getattr(e, "operation_id", "")
        extra = f"[{len(e.receipts)}]" if isinstance(e, Executed) else ""
        out.append(f"{kind}{':' + op if op else ''}{extra}")
    return " ".join(out)


async def _history(bus: Bus, run_id: str) -> list[AnyEvent]:
    from services.runtime.nats.history import read_run

    return await read_run(bus.js, PREFIX, run_id)
