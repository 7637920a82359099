"""Throughput of one executor against two, on independent scenes, from one run.

    .venv/bin/python bench/executors.py [--runs 16]

Each run is the 25-operation plan of bench/plan25.py on its own scene (after a setup run
that creates the scene's 20 objects). All runs are submitted at once; the figure is runs
and operations per second until the last one completes.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from plan25 import plan25, setup_plan

from services.client import MeshClient, build_request
from services.mesh import Mesh
from services.runtime.host import Bus
from services.runtime.settings import Settings


async def throughput(executors: int, runs: int) -> float:
    """Seconds to complete ``runs`` independent runs with ``executors`` executors."""
    with tempfile.TemporaryDirectory(prefix="blendmesh-bench-") as home:
        settings = Settings(home=Path(home), prefix="bench", user="bench", executors=executors)
        async with Mesh(settings) as mesh:
            bus = await Bus.open(mesh.url, settings.prefix, "bench", mesh.login("client"))
            client = MeshClient(bus)
            scenes = [f"scene{i:02d}" for i in range(runs)]
            setups = [
                build_request(
                    user="bench", scene_id=s, plan={**setup_plan(), "request_id": f"setup-{s}"}
                )
                for s in scenes
            ]
            for result in await asyncio.gather(*(client.run(r) for r in setups)):
                assert result.status == "completed", result.message
            requests = [
                build_request(
                    user="bench", scene_id=s, plan={**plan25(1), "request_id": f"work-{s}"}
                )
                for s in scenes
            ]
            started = time.perf_counter()
            results = await asyncio.gather(*(client.run(r) for r in requests))
            elapsed = time.perf_counter() - started
            assert all(r.status == "completed" for r in results)
            await bus.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=16)
    args = parser.parse_args()
    one = asyncio.run(throughput(1, args.runs))
    two = asyncio.run(throughput(2, args.runs))
    ops = args.runs * 25
    print(f"{args.runs} runs of 25 operations on independent 20-object scenes")
    print(f"{'':14}{'seconds':>10}{'runs/s':>10}{'ops/s':>10}")
    for name, secs in (("1 executor", one), ("2 executors", two)):
        print(f"{name:14}{secs:10.2f}{args.runs / secs:10.1f}{ops / secs:10.0f}")
    print(f"speed-up of two executors over one: {one / two:.2f}x")


if __name__ == "__main__":
    main()
