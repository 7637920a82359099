"""What the scene snapshot and the hash after an operation cost, and how that grows.

    .venv/bin/python bench/snapshot.py [--repeat 10] [--sizes 20 1000]

For each scene size (the objects of bench/plan25.py's setup), measured on one real
bridge process: ``scene.snapshot`` right after a transform changed one object (what the
executor asks for at every commit to summarise the scene for planners), the same
snapshot described afresh (``blendmesh/scene.snapshot_full``: what ``scene.snapshot``
cost before it was assembled from the digest cache), the full hash
(``blendmesh/scene.fingerprint_full``, the same description hashed), and a transform
followed by the fingerprint round trip against the transform alone, whose result
carries the scene hash. The transform before each snapshot is not timed.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from plan25 import setup_plans

from contracts.bridge import FullSnapshot
from services.executor.adapters.bridge_client import BridgeProcess


async def median_ms(repeat: int, action: Callable[[int], Awaitable[float]]) -> float:
    return statistics.median([await action(i) for i in range(repeat)]) * 1000


async def build(bridge: BridgeProcess, objects: int) -> None:
    await bridge.reset()
    for plan in setup_plans(objects):
        for op in plan["operations"]:
            result = await bridge.call_tool(op["tool_name"], op["args"], op["operation_id"])
            if not result.ok:
                raise SystemExit(f"setup failed: {result.message}")


async def measure(bridge: BridgeProcess, objects: int, repeat: int) -> dict[str, float]:
    await build(bridge, objects)
    await bridge.fingerprint()  # fills the digest cache, as the setup run's commit would

    async def transform(i: int) -> float:
        started = time.perf_counter()
        result = await bridge.call_tool(
            "object.transform", {"name": "Obj00", "location": [i % 7, 0, 0]}, f"t{i}"
        )
        if not result.ok:
            raise SystemExit(f"transform failed: {result.message}")
        return time.perf_counter() - started

    async def snapshot(i: int) -> float:
        await transform(i)
        started = time.perf_counter()
        result = await bridge.call_tool("scene.snapshot", {}, f"s{i}")
        took = time.perf_counter() - started
        if result.data is None or result.data["hash"] != await bridge.fingerprint_full():
            raise SystemExit("scene.snapshot does not match the full hash")
        return took

    async def full_snapshot(i: int) -> float:
        await transform(i)
        started = time.perf_counter()
        await bridge.request("blendmesh/scene.snapshot_full", FullSnapshot)
        return time.perf_counter() - started

    async def full_hash(i: int) -> float:
        await transform(i)
        started = time.perf_counter()
        await bridge.fingerprint_full()
        return time.perf_counter() - started

    async def transform_then_fingerprint(i: int) -> float:
        took = await transform(i)
        started = time.perf_counter()
        await bridge.fingerprint()
        return took + time.perf_counter() - started

    return {
        "scene.snapshot": await median_ms(repeat, snapshot),
        "full snapshot": await median_ms(repeat, full_snapshot),
        "full fingerprint": await median_ms(repeat, full_hash),
        "transform + fingerprint": await median_ms(repeat, transform_then_fingerprint),
        "transform (hash in result)": await median_ms(repeat, transform),
    }


async def main_async(repeat: int, sizes: list[int]) -> None:
    bridge = BridgeProcess(call_timeout=120)
    await bridge.start()
    try:
        figures = {n: await measure(bridge, n, repeat) for n in sizes}
    finally:
        await bridge.close()
    small, large = sizes[0], sizes[-1]
    print(f"median ms over {repeat} repetitions, one object transformed before each")
    print(f"{'':28}{f'{small} objects':>14}{f'{large} objects':>14}{'growth':>9}")
    for name in figures[small]:
        a, b = figures[small][name], figures[large][name]
        print(f"{name:28}{a:14.2f}{b:14.2f}{b / a:8.1f}x")
    ratios = ", ".join(
        f"{f['scene.snapshot'] / f['full snapshot']:.3f} at {n} objects" for n, f in figures.items()
    )
    print(f"scene.snapshot / full snapshot: {ratios}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--sizes", type=int, nargs="+", default=[20, 1000])
    args = parser.parse_args()
    if args.repeat < 1 or any(n < 1 or n > 5000 for n in args.sizes):
        parser.error("--repeat must be at least 1 and each size between 1 and 5000")
    asyncio.run(main_async(args.repeat, args.sizes))


if __name__ == "__main__":
    main()
