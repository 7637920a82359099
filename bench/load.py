"""One executor under load: K clients, each on a scene of its own, against one embedded
mesh whose executor keeps a pool of Blender bridges (ADR 0070).

    .venv/bin/python bench/load.py [--clients 4] [--runs 20] [--bridges N]

Every client runs ``--runs`` one-operation runs back to back, all clients at once, after a
setup run per scene and one warm-up round (which starts the pool's spare Blenders). The
figures: runs per second until the last run ended, each run's latency at p50 and p99 as
its client saw it, and lost receipts: runs whose result came back without its receipt, or
whose ``executed`` event with that receipt is not in the log when the load is over.
``--bridges`` sets the pool (BLENDMESH_BRIDGES); unset, the executor sizes it itself.
BLENDMESH_AUDIT_APART=1 measures the mesh with its audit projection in a child process.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from plan25 import op

from contracts.events import Executed
from contracts.limits import MAX_BRIDGES
from services.doors.cli.mesh import Mesh
from services.doors.core.client import MeshClient
from services.doors.core.requests import build_request
from services.runtime.nats.history import read_run
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings

PREVIEWS = Settings.from_env().previews  # as every blendmesh process has them
APART = Settings.from_env().audit_apart  # BLENDMESH_AUDIT_APART=1: the audit in a child
MAX_CLIENTS = 64
MAX_RUNS = 1000  # per client
RUN_WITHIN = 120.0  # seconds one run may take before it counts as lost


@dataclass(frozen=True)
class Load:
    clients: int
    bridges: int | None
    runs: int  # runs asked for in the timed window
    seconds: float  # until the last of them ended
    latencies: list[float]  # of the runs that completed
    lost: int  # runs without their receipt, in the result or in the log

    @property
    def per_second(self) -> float:
        return self.runs / self.seconds

    def quantile(self, q: int) -> float:
        """The ``q``-th percentile of the latencies (nan when none completed)."""
        if len(self.latencies) < 2:
            return self.latencies[0] if self.latencies else float("nan")
        return statistics.quantiles(self.latencies, n=100, method="inclusive")[q - 1]

    def row(self) -> str:
        return (
            f"{self.per_second:.1f} runs/s, p50 {self.quantile(50) * 1e3:.0f} ms, "
            f"p99 {self.quantile(99) * 1e3:.0f} ms, {self.lost} of {self.runs} receipts lost"
        )


def moved(request_id: str, i: int) -> dict[str, Any]:
    step = op("t00", "object.transform", {"name": "Obj00", "location": [0.0, i % 7, 0.0]})
    return {"request_id": request_id, "operations": [step]}


def created(request_id: str) -> dict[str, Any]:
    step = op("c00", "object.create", {"primitive": "cube", "name": "Obj00"})
    return {"request_id": request_id, "operations": [step]}


async def one_run(
    client: MeshClient, user: str, scene: str, plan: dict[str, Any]
) -> tuple[str, float | None]:
    """The run's id and its latency, or None when it came back without its receipt."""
    request = build_request(user=user, scene_id=scene, plan=plan)
    started = time.perf_counter()
    try:
        result = await client.run(request, timeout=RUN_WITHIN)
    except TimeoutError:
        return request.run_id, None
    seconds = time.perf_counter() - started
    fine = result.status == "completed" and len(result.receipts) == len(plan["operations"])
    return request.run_id, seconds if fine else None


async def in_log(bus: Bus, run_id: str) -> bool:
    """Whether the run's ``executed`` event, with its receipts, is in the log."""
    events = await read_run(bus.js, bus.prefix, run_id)
    return any(isinstance(e, Executed) and e.receipts for e in events)


async def load(clients: int, runs: int, bridges: int | None = None) -> Load:
    with tempfile.TemporaryDirectory(prefix="blendmesh-load-") as home:
        settings = Settings(
            home=Path(home),
            prefix="load",
            user="load",
            previews=PREVIEWS,
            bridges=bridges,
            audit_apart=APART,
        )
        async with Mesh(settings) as mesh:
            bus = await Bus.open(mesh.url, settings.prefix, "load", mesh.login("client"))
            client = MeshClient(bus)
            users = [(f"user{k}", f"scene{k}") for k in range(clients)]
            # Each scene made, then one round at once: it starts the pool's spare Blenders.
            for tag, plan in (("setup", created), ("warm", lambda r: moved(r, 0))):
                ready = await asyncio.gather(
                    *(one_run(client, u, s, plan(f"{tag}-{s}")) for u, s in users)
                )
                assert all(seconds is not None for _, seconds in ready), f"the {tag} runs failed"

            async def client_runs(user: str, scene: str) -> list[tuple[str, float | None]]:
                return [
                    await one_run(client, user, scene, moved(f"{scene}-{i}", i + 1))
                    for i in range(runs)
                ]

            started = time.perf_counter()
            done = await asyncio.gather(*(client_runs(u, s) for u, s in users))
            seconds = time.perf_counter() - started
            results = [r for each in done for r in each]
            reader = await Bus.open(mesh.url, settings.prefix, "load", mesh.login("audit"))
            try:
                logged = [await in_log(reader, run_id) for run_id, _ in results]
            finally:
                await reader.close()
            await bus.close()
    latencies = [s for _, s in results if s is not None]
    lost = sum(s is None or not found for (_, s), found in zip(results, logged, strict=True))
    return Load(clients, bridges, len(results), seconds, latencies, lost)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clients", type=int, default=4, help="clients, one scene each")
    parser.add_argument("--runs", type=int, default=20, help="one-operation runs per client")
    parser.add_argument("--bridges", type=int, default=None, help="the executor's pool")
    args = parser.parse_args()
    if not 1 <= args.clients <= MAX_CLIENTS:
        parser.error(f"--clients takes 1 to {MAX_CLIENTS}")
    if not 1 <= args.runs <= MAX_RUNS:
        parser.error(f"--runs takes 1 to {MAX_RUNS}")
    if args.bridges is not None and not 1 <= args.bridges <= MAX_BRIDGES:
        parser.error(f"--bridges takes 1 to {MAX_BRIDGES}")
    measured = asyncio.run(load(args.clients, args.runs, args.bridges))
    pool = "sized by the executor" if args.bridges is None else str(args.bridges)
    audit = "apart" if APART else "on the mesh's loop"
    print(
        f"{args.clients} clients x {args.runs} runs, one executor, bridges: {pool}, audit {audit}"
    )
    print(f"load, one executor: {measured.row()}")


if __name__ == "__main__":
    main()
