"""A 25-op NODE_TREE response through the mesh against the same node calls in bpy.

    .venv/bin/python bench/geonodes.py [--runs 10]

Each iteration makes a fresh scene with a plane, then times a spec 004 response of 25
operations (8 nodes created, 8 inputs set, 9 links) end to end through the embedded mesh:
compile, node-catalog check, policy, executor with journal, fingerprints and checkpoints,
the inspection artifact, the gates, audit. The baseline makes the same 25 calls directly
with bpy on the same target (bench/geonodes_raw.py, in a child process).
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

from geonodes_plan import response

from services.doors.cli.mesh import Mesh
from services.doors.core.client import MeshClient
from services.doors.core.requests import build_request
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings

# Previews as every blendmesh process has them: on unless BLENDMESH_PREVIEWS=0 (the
# tests' quick runs of this bench set it; the figures are measured with previews on).
PREVIEWS = Settings.from_env().previews

PLANE = {
    "operation_id": "plane",
    "tool_name": "object.create",
    "args": {"primitive": "plane", "name": "Plane"},
    "depends_on": [],
    "safety_level": "safe_write",
}


async def mesh_seconds(runs: int) -> list[float]:
    with tempfile.TemporaryDirectory(prefix="blendmesh-bench-gn-") as home:
        settings = Settings(home=Path(home), prefix="benchgn", user="bench", previews=PREVIEWS)
        async with Mesh(settings) as mesh:
            bus = await Bus.open(mesh.url, settings.prefix, "bench", mesh.login("client"))
            client = MeshClient(bus)
            seconds = []
            for i in range(runs):
                scene = f"gn-{i}"
                plane = {"request_id": f"plane-{i}", "operations": [PLANE]}
                made = await client.run(build_request(user="bench", scene_id=scene, plan=plane))
                assert made.status == "completed", made
                request = build_request(user="bench", scene_id=scene, plan=response())
                started = time.perf_counter()
                result = await client.run(request, timeout=300)
                seconds.append(time.perf_counter() - started)
                assert result.status == "completed", result
                assert len(result.receipts) == 26  # the target, then the 25 ops
            await bus.close()
    return seconds


def raw_seconds(runs: int) -> list[float]:
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).parent / "geonodes_raw.py"), str(runs)],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
        cwd=Path(__file__).parent,
    )
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    return list(json.loads(line.removeprefix("RESULT ")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    mesh = asyncio.run(mesh_seconds(args.runs))
    raw = raw_seconds(args.runs)
    m, r = statistics.median(mesh), statistics.median(raw)
    print(f"25-op NODE_TREE response, {args.runs} runs, median")
    print(f"mesh (end to end, gates included): {m * 1e3:.1f} ms")
    print(f"the same 25 calls in bpy:          {r * 1e3:.2f} ms")
    print(f"ratio mesh / bpy: {m / r:.0f}x")


if __name__ == "__main__":
    main()
