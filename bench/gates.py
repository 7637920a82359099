"""What the verification gates add to a run, at 20 and at 1000 objects.

    .venv/bin/python bench/gates.py [--runs 10]

Seeds a scene of N objects through the mesh, then times one-operation runs on it and
reads each run's events back: from the executor's result to the guardians' verdict (fetch
the inspection artifact, lay it out, run every configured guardian, publish), and from the
verdict to the planner's completion. The executor's side of the gates (describing the
revision and storing the artifact) is what ``bench/inspection.py`` measures.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contracts.events import Executed, GatesEvaluated, RunCompleted
from services.doors.cli.mesh import Mesh
from services.doors.core.client import MeshClient
from services.doors.core.requests import build_request
from services.runtime.nats.history import read_run
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings

# Previews as every blendmesh process has them: on unless BLENDMESH_PREVIEWS=0 (the
# tests' quick runs of this bench set it; the figures are measured with previews on).
PREVIEWS = Settings.from_env().previews

BATCH = 250  # objects created per seeding plan, well under the operations limit


def op(op_id: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "operation_id": op_id,
        "tool_name": tool,
        "args": args,
        "depends_on": [],
        "safety_level": "safe_write",
    }


async def stage_times(objects: int, runs: int) -> tuple[list[float], list[float]]:
    """Per run: (executed -> gates_evaluated, gates_evaluated -> completed), in seconds."""
    with tempfile.TemporaryDirectory(prefix="blendmesh-bench-gates-") as home:
        settings = Settings(home=Path(home), prefix="benchgates", user="bench", previews=PREVIEWS)
        async with Mesh(settings) as mesh:
            bus = await Bus.open(mesh.url, settings.prefix, "bench", mesh.login("client"))
            client = MeshClient(bus)
            for start in range(0, objects, BATCH):
                ops = [
                    op(f"c{i:04d}", "object.create", {"primitive": "cube", "name": f"Obj{i:04d}"})
                    for i in range(start, min(objects, start + BATCH))
                ]
                plan = {"request_id": f"seed-{start}", "operations": ops}
                seeded = await client.run(
                    build_request(user="bench", scene_id="bench", plan=plan), timeout=600
                )
                assert seeded.status == "completed", seeded
            judged, finished = [], []
            for i in range(runs):
                move = op("t", "object.transform", {"name": "Obj0000", "location": [0, 0, i]})
                plan = {"request_id": f"move-{i}", "operations": [move]}
                result = await client.run(
                    build_request(user="bench", scene_id="bench", plan=plan), timeout=600
                )
                assert result.status == "completed", result
                events = await read_run(bus.js, settings.prefix, result.run_id)
                executed = next(e for e in events if isinstance(e, Executed))
                verdict = next(e for e in events if isinstance(e, GatesEvaluated))
                done = next(e for e in events if isinstance(e, RunCompleted))
                judged.append(verdict.at - executed.at)
                finished.append(done.at - verdict.at)
            await bus.close()
    return judged, finished


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--sizes", type=int, nargs="+", default=[20, 1000])
    args = parser.parse_args()
    medians = {}
    print(f"one-operation runs, {args.runs} per scene size, median ms")
    print(f"{'objects':>8}{'executed->gates':>18}{'gates->completed':>18}{'gates in all':>14}")
    for size in args.sizes:
        judged, finished = asyncio.run(stage_times(size, args.runs))
        j, f = statistics.median(judged) * 1e3, statistics.median(finished) * 1e3
        medians[size] = j + f
        print(f"{size:>8}{j:>18.1f}{f:>18.1f}{j + f:>14.1f}")
    if len(args.sizes) == 2:
        small, large = args.sizes
        print(f"gates at {large} objects / at {small}: {medians[large] / medians[small]:.1f}x")


if __name__ == "__main__":
    main()
