"""Every row of the performance table from one run, and where a run's time goes.

    .venv/bin/python bench/table.py [--runs 20] [--large 1000] [--executor-runs 16]
        [--load-clients 4] [--load-runs 20] [--rebuilds 1] [--only rebuild]

One embedded mesh, warm, runs back to back on a 20-object scene: a one-operation run and
the 25-operation run of bench/plan25.py; the same 25 operations on a ``--large``-object
scene; the blender-mcp style peer loop (bench/peer_loop.py) on the same operations;
two executors against one on independent scenes, each executor a process of its own as
deployed (bench/executors.py; ``--executor-runs 0`` leaves that row out, as its two
meshes take longer than the rest); one executor under load, ``--load-clients`` clients on
scenes of their own (bench/load.py: runs/s, p50/p99, lost receipts; ``--load-runs 0``
leaves it out); ``audit rebuild`` against a raw replay of the same log, ``--rebuilds`` times in turn
(the row gives the range). ``--only rebuild`` prints that row alone: the mesh's runs still
make the log it rebuilds, but the peer loop, the executors, the load and the floor are
left out.
The fsyncs nats-server makes per run are counted with strace (bench/floor.py), on runs
apart from the timed ones. Then the floor under a run (bench/floor.py: an fsync, a bare
publish and its ack, N messages one by one against one atomic batch) and a per-stage
profile of the 25-operation run at both sizes (bench/stages.py). Ratios are measured
within this one run, so a busy machine moves them less than the absolute figures.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from executors import caught_up, throughput
from floor import floor_rows, fsyncs_during
from load import MAX_CLIENTS, MAX_RUNS, load
from nats.aio.msg import Msg
from nats.js.api import ConsumerConfig, DeliverPolicy
from peer_loop import peer_latencies
from plan25 import op, plan25, setup_plans
from stages import Spans, Stopwatch, report

from contracts import subjects
from services.audit import client as audit
from services.doors.cli.mesh import Mesh
from services.doors.core.client import MeshClient
from services.doors.core.requests import build_request
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings

# Previews as every blendmesh process has them: on unless BLENDMESH_PREVIEWS=0 (the
# tests' quick runs of this bench set it; the figures are measured with previews on).
PREVIEWS = Settings.from_env().previews

SMALL = 20
FSYNC_RUNS = 5  # runs whose nats-server fsyncs are counted, per row
REQUESTS = itertools.count()
MAX_REBUILDS = 20


def one_op(i: int) -> dict[str, Any]:
    moved = op("t00", "object.transform", {"name": "Obj00", "location": [0.0, i % 7, 0.0]})
    return {"request_id": f"one-{i}", "operations": [moved]}


async def timed_runs(
    client: MeshClient, scene: str, plans: list[dict[str, Any]], ops: int
) -> list[float]:
    seconds = []
    for plan in plans:
        # A request id of its own each time: the journal would skip a repeated one.
        plan = {**plan, "request_id": f"{scene}-{next(REQUESTS)}"}
        request = build_request(user="bench", scene_id=scene, plan=plan)
        started = time.perf_counter()
        result = await client.run(request)
        seconds.append(time.perf_counter() - started)
        assert result.status == "completed", result.message
        assert len(result.receipts) == ops
    return seconds


async def raw_replay(bus: Bus, upto: int) -> float:
    """Seconds to read the log's first ``upto`` messages and do nothing with them, read the
    way ``audit rebuild`` reads it (a pushed ordered consumer, services/audit/replay.py), so
    the ratio compares applying the events with reading them alone."""
    done = asyncio.Event()
    seen = 0

    async def on_msg(msg: Msg) -> None:
        nonlocal seen
        seen = msg.metadata.sequence.stream
        if seen >= upto:
            done.set()

    started = time.perf_counter()
    config = ConsumerConfig(deliver_policy=DeliverPolicy.ALL)
    sub = await bus.js.subscribe(
        ">",
        stream=subjects.stream_name(bus.prefix),
        cb=on_msg,
        ordered_consumer=True,
        config=config,
    )
    try:
        await asyncio.wait_for(done.wait(), 120)
        return time.perf_counter() - started
    finally:
        await sub.unsubscribe()


@dataclass(frozen=True)
class Round:
    """One rebuild and the raw replay after it: wall seconds, and this process's CPU
    seconds (the mesh's services run in it; nats-server does not), which a busy machine
    moves far less than the wall clock."""

    events: int
    rebuild_s: float
    raw_s: float
    rebuild_cpu_s: float
    raw_cpu_s: float


async def rebuilds_against_raw(mesh: Mesh, settings: Settings, bus: Bus, times: int) -> list[Round]:
    """``times`` rebuilds, each followed by a raw replay of the same log, so a busy
    spell of the machine hits both alike."""
    # The live projection first finishes what the runs left it: a rebuild timed
    # while it still works would measure both.
    # Only admin may inspect a service's consumer (docs/adr/0015).
    admin = await Bus.open(mesh.url, settings.prefix, "bench", mesh.login("admin"))
    await caught_up(admin, "audit")
    await admin.close()
    # The audit role's own reading rights: a client may not read the whole log.
    reader = await Bus.open(mesh.url, settings.prefix, "bench", mesh.login("audit"))
    rounds = []
    try:
        for _ in range(times):
            started, cpu = time.perf_counter(), time.process_time()
            rebuilt = await audit.rebuild(bus.nc, settings.prefix, timeout=600)
            rebuild_s, rebuild_cpu = time.perf_counter() - started, time.process_time() - cpu
            cpu = time.process_time()
            raw_s = await raw_replay(reader, rebuilt.last_seq)
            raw_cpu = time.process_time() - cpu
            rounds.append(Round(rebuilt.last_seq, rebuild_s, raw_s, rebuild_cpu, raw_cpu))
    finally:
        await reader.close()
    return rounds


def span(values: list[float], fmt: str) -> str:
    """``values`` as one figure, or the range they cover."""
    low, high = format(min(values), fmt), format(max(values), fmt)
    return low if low == high else f"{low}-{high}"


def rebuild_row(rounds: list[Round]) -> str:
    """The ratio, rebuild and raw events/s of each round, as one value or a range."""
    ratios = [r.raw_s / r.rebuild_s for r in rounds]
    rebuilt = [r.events / r.rebuild_s for r in rounds]
    read = [r.events / r.raw_s for r in rounds]
    return f"{span(ratios, '.0%')} ({span(rebuilt, '.0f')} / {span(read, '.0f')} events/s)"


def rebuild_cpu_row(rounds: list[Round]) -> str:
    """The same ratio in this process's CPU time, and the CPU microseconds per event."""
    ratios = [r.raw_cpu_s / r.rebuild_cpu_s for r in rounds]
    rebuilt = [r.rebuild_cpu_s / r.events * 1e6 for r in rounds]
    read = [r.raw_cpu_s / r.events * 1e6 for r in rounds]
    return f"{span(ratios, '.0%')} ({span(rebuilt, '.0f')} / {span(read, '.0f')} us/event)"


async def mesh_figures(
    runs: int, large: int, profile_runs: int, rebuilds: int = 1
) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="blendmesh-bench-") as home:
        settings = Settings(home=Path(home), prefix="bench", user="bench", previews=PREVIEWS)
        async with Mesh(settings) as mesh:
            bus = await Bus.open(mesh.url, settings.prefix, "bench", mesh.login("client"))
            client = MeshClient(bus)
            for scene, size in (("small", SMALL), ("large", large)):
                for plan in setup_plans(size):
                    await timed_runs(client, scene, [plan], len(plan["operations"]))
                await timed_runs(client, scene, [plan25(0)], 25)  # warm up
            figures["one"] = await timed_runs(
                client, "small", [one_op(i) for i in range(1, runs + 1)], 1
            )
            figures["small"] = await timed_runs(
                client, "small", [plan25(i) for i in range(1, runs + 1)], 25
            )
            figures["large"] = await timed_runs(
                client, "large", [plan25(i) for i in range(1, runs + 1)], 25
            )
            # Counted apart from the timed rows: strace slows every syscall it watches.
            for name, plans, ops in (
                ("fsyncs one", [one_op(i) for i in range(runs + 1, runs + 1 + FSYNC_RUNS)], 1),
                ("fsyncs 25", [plan25(i) for i in range(runs + 1, runs + 1 + FSYNC_RUNS)], 25),
            ):
                async with fsyncs_during(mesh.server_pid) as counted:
                    await timed_runs(client, "small", plans, ops)
                figures[name] = counted[0] / FSYNC_RUNS if counted else None
            for scene in ("small", "large"):
                spans, watch = Spans(settings), Stopwatch()
                with watch.installed():
                    seconds = await timed_runs(
                        client, scene, [plan25(i) for i in range(profile_runs)], 25
                    )
                figures[f"profile {scene}"] = report(
                    profile_runs, sum(seconds), spans.per_service(), watch
                )
                spans.close()
            figures["rebuild"] = await rebuilds_against_raw(mesh, settings, bus, rebuilds)
            await bus.close()
    return figures


def per_run(fsyncs: float | None) -> str:
    return "not counted (strace missing or not allowed)" if fsyncs is None else f"{fsyncs:.1f}"


def p50(values: list[float]) -> float:
    return statistics.median(values)


REBUILD_ROW = "audit rebuild events/s / raw JetStream replay events/s"
REBUILD_TARGET = ">= 50%"


def measure(
    runs: int,
    large: int,
    executor_runs: int,
    profile_runs: int,
    load_clients: int,
    load_runs: int,
    rebuilds: int = 1,
) -> tuple[list[tuple[str, str, str]], dict[str, Any], float]:
    """The table's rows (name, measured, target), the mesh's figures (its per-stage
    profiles among them) and the ratio of the 25-operation run to the peer loop."""
    mesh = asyncio.run(mesh_figures(runs, large, profile_runs, rebuilds))
    peer = peer_latencies(runs)
    executors = "not measured (--executor-runs 0)"
    if executor_runs:
        one_executor = asyncio.run(throughput(1, executor_runs))
        two_executors = asyncio.run(throughput(2, executor_runs))
        executors = f"{one_executor / two_executors:.2f}x"
    loaded = "not measured (--load-runs 0)"
    if load_runs:
        loaded = asyncio.run(load(load_clients, load_runs)).row()
    one, small, big, loop = (p50(mesh["one"]), p50(mesh["small"]), p50(mesh["large"]), p50(peer))
    rows = [
        ("one-operation run, p50 end to end", f"{one * 1e3:.1f} ms", "<= 20 ms"),
        ("25-operation run, p50", f"{small * 1e3:.1f} ms", "<= 45 ms"),
        ("the same 25 operations, blender-mcp style loop", f"{loop * 1e3:.2f} ms", "-"),
        ("mesh / that loop, 25 operations", f"{small / loop:.0f}x", "<= 10x"),
        ("nats-server fsyncs per one-operation run", per_run(mesh["fsyncs one"]), "<= 10"),
        ("nats-server fsyncs per 25-operation run", per_run(mesh["fsyncs 25"]), "<= 20"),
        (f"25-operation run at {large} objects, p50", f"{big * 1e3:.1f} ms", "-"),
        (f"per-operation cost at {large} objects / at {SMALL}", f"{big / small:.1f}x", "<= 3x"),
        (
            "two executors / one, independent scenes (executor processes)",
            executors,
            ">= 1.6x",
        ),
        (
            f"one executor, {load_clients} clients on scenes of their own, one-operation runs",
            loaded,
            ">= 20 runs/s, p99 <= 0.5 s, 0 lost",
        ),
        (REBUILD_ROW, rebuild_row(mesh["rebuild"]), REBUILD_TARGET),
    ]
    return rows, mesh, small / loop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20, help="timed runs per row")
    parser.add_argument("--large", type=int, default=1000, help="objects in the large scene")
    parser.add_argument("--executor-runs", type=int, default=16, help="0: no executors row")
    parser.add_argument("--profile-runs", type=int, default=10)
    parser.add_argument("--load-clients", type=int, default=4, help="clients of the load row")
    parser.add_argument("--load-runs", type=int, default=20, help="runs per client; 0: no row")
    parser.add_argument("--floor-repeat", type=int, default=200, help="samples per floor row")
    parser.add_argument(
        "--rebuilds", type=int, default=1, help="rebuilds, each against a raw replay"
    )
    parser.add_argument(
        "--only",
        choices=["rebuild"],
        help="rebuild: the audit rebuild row alone (the runs that make its log still run)",
    )
    args = parser.parse_args()
    if not 1 <= args.rebuilds <= MAX_REBUILDS:
        parser.error(f"--rebuilds takes 1 to {MAX_REBUILDS}")
    if not 10 <= args.floor_repeat <= 5000:
        parser.error("--floor-repeat takes 10 to 5000 samples")
    if args.executor_runs < 0:
        parser.error("--executor-runs must be 0 (the row left out) or more")
    if not 1 <= args.load_clients <= MAX_CLIENTS:
        parser.error(f"--load-clients takes 1 to {MAX_CLIENTS}")
    if not 0 <= args.load_runs <= MAX_RUNS:
        parser.error(f"--load-runs takes 0 (the row left out) to {MAX_RUNS}")
    if args.only == "rebuild":
        figures = asyncio.run(mesh_figures(args.runs, args.large, args.profile_runs, args.rebuilds))
        rounds: list[Round] = figures["rebuild"]
        print(f"{args.runs} runs per row, {len(rounds)} rebuilds of one log")
        print("| | measured | target |")
        print("|---|---|---|")
        row = f"{REBUILD_ROW}, {rounds[0].events} events"
        print(f"| {row} | {rebuild_row(rounds)} | {REBUILD_TARGET} |")
        print(f"| the same in this process's CPU time | {rebuild_cpu_row(rounds)} | - |")
        return
    rows, mesh, ratio = measure(
        args.runs,
        args.large,
        args.executor_runs,
        args.profile_runs,
        args.load_clients,
        args.load_runs,
        args.rebuilds,
    )
    print(f"{args.runs} runs per row, {SMALL}-object scene unless said, one run of this bench")
    print("| | measured | target |")
    print("|---|---|---|")
    for name, measured, target in rows:
        print(f"| {name} | {measured} | {target} |")
    for scene, size in (("small", SMALL), ("large", args.large)):
        print(f"\nper-stage profile, 25-operation run at {size} objects ({args.profile_runs} runs)")
        print("\n".join(mesh[f"profile {scene}"]))
    with tempfile.TemporaryDirectory(prefix="blendmesh-floor-") as tmp:
        floor = asyncio.run(floor_rows(args.floor_repeat, [21, 117], Path(tmp)))
    print(f"\nthe floor under a run ({args.floor_repeat} samples per row)")
    for name, measured in floor:
        print(f"| {name} | {measured} |")
    print(f"\nmesh / peer loop at p50: {ratio:.0f}x")


if __name__ == "__main__":
    main()
