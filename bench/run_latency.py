"""Run latency through the embedded mesh against the same work done directly in bpy.

    .venv/bin/python bench/run_latency.py [--runs 30]

Prints p50 / p95 run latency and operations per second for a 25-operation plan on a
20-object scene through the whole mesh (planner, policy, executor with checkpoints and
fingerprints, audit), the same 25 operations applied in-process to bpy, and their ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from plan25 import plan25, setup_plan

from services.doors.cli.mesh import Mesh
from services.doors.core.client import MeshClient
from services.doors.core.requests import build_request
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings

# Previews as every blendmesh process has them: on unless BLENDMESH_PREVIEWS=0 (the
# tests' quick runs of this bench set it; the figures are measured with previews on).
PREVIEWS = Settings.from_env().previews


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def mesh_latencies(runs: int) -> list[float]:
    with tempfile.TemporaryDirectory(prefix="blendmesh-bench-") as home:
        settings = Settings(home=Path(home), prefix="bench", user="bench", previews=PREVIEWS)
        async with Mesh(settings) as mesh:
            bus = await Bus.open(mesh.url, settings.prefix, "bench", mesh.login("client"))
            client = MeshClient(bus)
            setup = await client.run(
                build_request(user="bench", scene_id="bench", plan=setup_plan())
            )
            assert setup.status == "completed", setup
            seconds = []
            for i in range(runs):
                request = build_request(user="bench", scene_id="bench", plan=plan25(i))
                started = time.perf_counter()
                result = await client.run(request)
                seconds.append(time.perf_counter() - started)
                assert result.status == "completed", result.message
                assert len(result.receipts) == 25
            await bus.close()
    return seconds


def raw_latencies(runs: int) -> list[float]:
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).parent / "raw_bpy.py"), str(runs)],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line.removeprefix("RESULT "))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    mesh = asyncio.run(mesh_latencies(args.runs))
    raw = raw_latencies(args.runs)
    m50, m95, r50, r95 = pct(mesh, 0.5), pct(mesh, 0.95), pct(raw, 0.5), pct(raw, 0.95)
    print(f"25-operation plan on a {20}-object scene, {args.runs} runs each")
    print(f"{'':24}{'p50 ms':>10}{'p95 ms':>10}{'ops/s':>10}")
    print(
        f"{'mesh (end to end)':24}{m50 * 1e3:10.1f}{m95 * 1e3:10.1f}"
        f"{25 / statistics.mean(mesh):10.0f}"
    )
    print(
        f"{'raw bpy (in-process)':24}{r50 * 1e3:10.2f}{r95 * 1e3:10.2f}"
        f"{25 / statistics.mean(raw):10.0f}"
    )
    print(f"ratio mesh / raw bpy at p50: {m50 / r50:.0f}x  (p95: {m95 / r95:.0f}x)")
    print(f"mesh overhead per operation at p50: {(m50 - r50) / 25 * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
