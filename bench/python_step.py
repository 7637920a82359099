"""What one spec 004 PYTHON step in safe mode costs, against the same change as a tool call.

    .venv/bin/python bench/python_step.py [--runs 10]

Measured in one run on one real bridge, moving one cube of a small scene:

- direct: ``object.transform`` (the bridge changes its own scene);
- warm: ``python.safe`` when the pre-started sandboxed Blender is ready (the scene saved
  into the sandbox, opened there, the code run, saved, and loaded back by the bridge);
- cold: ``python.safe`` issued right after another step, so it also waits for the next
  sandboxed Blender to start (bubblewrap, Python, bpy import);
- first: the first step of a fresh bridge (the sandbox probe included).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contracts.python_steps import code_sha256
from services.executor.adapters.bridge_client import BridgeProcess

WARM_WAIT = 2.0  # seconds for the next sandboxed Blender to be ready (about 0.6 s idle)


def _code(i: int) -> str:
    return f"import bpy\nbpy.data.objects['Cube'].location.x = {i}\n"


async def _step(bridge: BridgeProcess, i: int) -> float:
    code = _code(i)
    started = time.perf_counter()
    result = await bridge.call_tool(
        "python.safe", {"code": code, "code_sha256": code_sha256(code)}, f"p{i}"
    )
    elapsed = time.perf_counter() - started
    if not result.ok:
        raise SystemExit(f"python.safe failed: {result.message}")
    return elapsed * 1000


async def main(runs: int) -> None:
    bridge = BridgeProcess()
    await bridge.start()
    try:
        await bridge.call_tool("object.create", {"primitive": "cube", "name": "Cube"}, "c")
        first = await _step(bridge, 0)
        direct, warm, cold = [], [], []
        for i in range(1, runs + 1):
            started = time.perf_counter()
            await bridge.call_tool("object.transform", {"name": "Cube", "location": [i, 0, 0]}, "t")
            direct.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(WARM_WAIT)
            warm.append(await _step(bridge, i))
            cold.append(await _step(bridge, i + 1000))  # right after: the next one is starting
    finally:
        await bridge.close()
    d, w, c = (statistics.median(x) for x in (direct, warm, cold))
    print(f"runs: {runs}")
    print(f"direct object.transform p50: {d:.1f} ms")
    print(f"python.safe warm p50: {w:.1f} ms")
    print(f"python.safe cold p50 (sandbox start included): {c:.1f} ms")
    print(f"python.safe first on a fresh bridge (probe included): {first:.1f} ms")
    print(f"ratio warm / direct: {w / d:.1f}")
    print(f"ratio cold / warm: {c / w:.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    asyncio.run(main(parser.parse_args().runs))
