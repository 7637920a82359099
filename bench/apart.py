"""What the audit projection on the mesh's event loop costs a run, against it in a child
process of its own (BLENDMESH_AUDIT_APART, ADR 0070).

    .venv/bin/python bench/apart.py [--runs 30] [--rounds 3]

For each round, one fresh embedded mesh per way (audit on the loop, then apart), each on a
20-object scene: one-operation runs back to back, while a probe on the mesh's own event
loop publishes to a stream of its own and awaits each ack, as every service's publish
does, and the same probe runs meanwhile from a bare client in a process of its own.
Printed per way and round: the runs' p50 and p90, and each probe's awaited publish at p50
while the runs went on. Rounds alternate the ways, so a machine that gets busier during
the bench weighs on both.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from nats.js.api import StorageType, StreamConfig
from plan25 import op, setup_plans

from services.doors.cli.mesh import Mesh
from services.doors.core.client import MeshClient
from services.doors.core.requests import build_request
from services.runtime.nats.access import ADMIN, login_for
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings

PREVIEWS = Settings.from_env().previews  # as every blendmesh process has them
PROBE_STREAM = "BENCH_PROBE"
PROBE_EVERY = 0.005  # seconds between the probe's publishes
MAX_RUNS = 1000
MAX_ROUNDS = 20
REQUESTS = itertools.count()


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def probe(bus: Bus, seen: list[float], stop: asyncio.Event) -> None:
    """Awaited publishes from the mesh's loop until ``stop``: each one's seconds."""
    while not stop.is_set():
        started = time.perf_counter()
        await bus.js.publish("benchprobe.x", b"x", stream=PROBE_STREAM)
        seen.append(time.perf_counter() - started)
        await asyncio.sleep(PROBE_EVERY)


async def bare_probe(url: str, credentials: Path, prefix: str) -> None:
    """The probe from a process that does nothing else, until its stdin closes; prints
    its seconds as JSON."""
    bus = await Bus.open(url, prefix, "bare-probe", login_for(credentials, ADMIN))
    seen: list[float] = []
    stop = asyncio.Event()
    probing = asyncio.create_task(probe(bus, seen, stop))
    await asyncio.to_thread(sys.stdin.read)
    stop.set()
    await probing
    await bus.close()
    print(json.dumps(seen))


def bare_process(mesh: Mesh) -> subprocess.Popen[str]:
    """``bare_probe`` in a child process, probing until the parent closes its stdin."""
    return subprocess.Popen(
        [
            sys.executable,
            __file__,
            "--bare-probe",
            mesh.url,
            str(mesh.settings.credentials_path),
            mesh.settings.prefix,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


async def one_way(apart: bool, runs: int) -> tuple[list[float], list[float], list[float]]:
    """The runs' seconds, the in-mesh probe's and the bare probe's, on a fresh mesh."""
    with tempfile.TemporaryDirectory(prefix="blendmesh-apart-") as home:
        settings = Settings(
            home=Path(home), prefix="apart", user="bench", previews=PREVIEWS, audit_apart=apart
        )
        async with Mesh(settings) as mesh:
            bus = await Bus.open(mesh.url, settings.prefix, "bench", mesh.login("client"))
            admin = await Bus.open(mesh.url, settings.prefix, "probe", mesh.login("admin"))
            await admin.js.add_stream(
                StreamConfig(
                    name=PROBE_STREAM,
                    subjects=["benchprobe.>"],
                    storage=StorageType.FILE,
                    max_msgs=10_000,
                )
            )
            client = MeshClient(bus)

            async def run(plan: dict[str, object]) -> float:
                plan = {**plan, "request_id": f"r-{next(REQUESTS)}"}
                request = build_request(user="bench", scene_id="small", plan=plan)
                started = time.perf_counter()
                result = await client.run(request)
                assert result.status == "completed", result.message
                return time.perf_counter() - started

            for plan in setup_plans(20):
                await run(plan)
            moved = [
                {
                    "operations": [
                        op("t", "object.transform", {"name": "Obj00", "location": [i, 0, 0]})
                    ]
                }
                for i in range(runs + 3)
            ]
            for plan in moved[:3]:  # warm
                await run(plan)
            seen: list[float] = []
            stop = asyncio.Event()
            probing = asyncio.create_task(probe(admin, seen, stop))
            bare = bare_process(mesh)
            try:
                seconds = [await run(plan) for plan in moved[3:]]
            finally:
                stop.set()
                await probing
                out, _ = await asyncio.to_thread(bare.communicate)
            await admin.close()
            await bus.close()
    return seconds, seen, json.loads(out or "[]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bare-probe", nargs=3, help=argparse.SUPPRESS)  # the child's mode
    args = parser.parse_args()
    if args.bare_probe:
        url, credentials, prefix = args.bare_probe
        asyncio.run(bare_probe(url, Path(credentials), prefix))
        return
    if not 1 <= args.runs <= MAX_RUNS:
        parser.error(f"--runs takes 1 to {MAX_RUNS}")
    if not 1 <= args.rounds <= MAX_ROUNDS:
        parser.error(f"--rounds takes 1 to {MAX_ROUNDS}")
    print(f"one-operation runs, {args.runs} per mesh, previews {'on' if PREVIEWS else 'off'}")
    print("| round | audit | run p50 | run p90 | in-mesh publish p50 | p90 | bare client p50 |")
    print("|---|---|---|---|---|---|---|")
    summary: dict[bool, list[tuple[float, float, float]]] = {False: [], True: []}
    for round_ in range(1, args.rounds + 1):
        for apart in (False, True) if round_ % 2 else (True, False):
            runs, probes, bare = asyncio.run(one_way(apart, args.runs))
            p50, pub = statistics.median(runs), statistics.median(probes)
            alone = statistics.median(bare) if bare else float("nan")
            summary[apart].append((p50, pub, alone))
            print(
                f"| {round_} | {'apart' if apart else 'on the loop'} | {p50 * 1e3:.1f} ms "
                f"| {quantile(runs, 0.9) * 1e3:.1f} ms | {pub * 1e3:.2f} ms "
                f"| {quantile(probes, 0.9) * 1e3:.2f} ms | {alone * 1e3:.2f} ms |"
            )
    for apart, figures in summary.items():
        runs_ = [f[0] * 1e3 for f in figures]
        pubs = [f[1] * 1e3 for f in figures]
        bares = [f[2] * 1e3 for f in figures]
        print(
            f"audit {'apart' if apart else 'on the loop'}: run p50 {min(runs_):.1f}-"
            f"{max(runs_):.1f} ms, in-mesh publish p50 {min(pubs):.2f}-{max(pubs):.2f} ms, "
            f"bare client {min(bares):.2f}-{max(bares):.2f} ms"
        )


if __name__ == "__main__":
    main()
