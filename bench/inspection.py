"""What the inspection artifact costs per commit, and how that grows with the scene.

    .venv/bin/python bench/inspection.py [--repeat 10] [--sizes 20 1000]

For a 20-object and a 1000-object scene (``--sizes``; one object in four with a Bevel,
one in eight with a Subdivision Surface), measured in one run on the real bridge and a real
nats-server, what the executor does after every commit: one object changes (as an
operation would change it, not timed), then the bridge describes the scene
(``blendmesh/scene.inspect``, re-evaluating what changed), the artifact is encoded and put
in the scenes object store. "inspect after load" is the same description right after the
revision was loaded, when the whole scene is evaluated for the first time.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contracts.inspection import RunOperation, RunRecord
from contracts.scenes import Head
from services.executor.adapters.scene_store import JetStreamSceneStore
from services.executor.adapters.supervisor import SupervisedBridge
from services.executor.domain.inspection import document
from services.runtime.server.embedded import EmbeddedNats
from services.runtime.service.host import Bus

MAX_OBJECTS = 5000  # objects built in the larger scene, a few tool calls each
PRIMS = ["cube", "uv_sphere", "ico_sphere", "cylinder", "cone", "plane", "torus", "monkey"]
RECORD = RunRecord(
    run_id="bench",
    user="bench",
    approved_by="policy",
    operations=[
        RunOperation(
            operation_id="op01",
            tool_name="object.transform",
            safety_level="safe_write",
            args={"name": "O0000", "location": [1, 0, 0]},
        )
    ],
)


async def timed(repeat: int, action: Callable[[int], Awaitable[object]]) -> float:
    samples = []
    for i in range(repeat):
        started = time.perf_counter()
        await action(i)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


async def build(objects: int, bridge: SupervisedBridge) -> None:
    await bridge.reset()
    for i in range(objects):
        name = f"O{i:04d}"
        await bridge.call_tool(
            "object.create",
            {
                "primitive": PRIMS[i % len(PRIMS)],
                "name": name,
                "location": [i % 40 * 2.0, i // 40 * 2.0, 0],
            },
            f"c{i}",
        )
        if i % 4 == 0:
            await bridge.call_tool("modifier.add", {"object": name, "type": "BEVEL"}, f"b{i}")
        if i % 8 == 1:
            await bridge.call_tool("modifier.add", {"object": name, "type": "SUBSURF"}, f"s{i}")


async def measure(
    objects: int, repeat: int, bridge: SupervisedBridge, store: JetStreamSceneStore, work: Path
) -> dict[str, float]:
    await build(objects, bridge)
    sizes: list[int] = []

    def head(i: int) -> Head:
        return Head(
            scene_id=f"bench{objects}",
            revision=i + 1,
            scene_hash=f"{i:064x}",
            object_name=f"bench{objects}/{i + 1:08d}-{i:016x}",
            epoch=1,
        )

    async def change(i: int) -> None:
        await bridge.call_tool(
            "object.transform", {"name": "O0000", "location": [i, 0, 0]}, f"t{objects}-{i}"
        )

    async def per_commit(i: int) -> float:
        await change(i)
        started = time.perf_counter()
        scene = await bridge.inspect()
        data = await asyncio.to_thread(document, scene, head(i), RECORD)
        await store.put_inspection(head(i), data)
        sizes.append(len(data))
        return time.perf_counter() - started

    async def untimed_change(action: Callable[[int], Awaitable[float]]) -> float:
        samples = [await action(i) for i in range(repeat)]
        return statistics.median(samples) * 1000

    async def inspect_only(i: int) -> float:
        await change(i)
        started = time.perf_counter()
        await bridge.inspect()
        return time.perf_counter() - started

    checkpoint = work / f"inspect{objects}.blend"
    await bridge.save(str(checkpoint))

    async def after_load(i: int) -> float:
        await bridge.load(str(checkpoint))
        started = time.perf_counter()
        await bridge.inspect()
        return time.perf_counter() - started

    await bridge.inspect()  # the first evaluation of the built scene is not a commit's
    scene = await bridge.inspect()
    return {
        "inspect": await untimed_change(inspect_only),
        "encode": await timed(
            repeat, lambda i: asyncio.to_thread(document, scene, head(i), RECORD)
        ),
        "inspect + store": await untimed_change(per_commit),
        "inspect after load": await untimed_change(after_load),
        "artifact KiB": statistics.median(sizes) / 1024,
    }


async def main_async(repeat: int, sizes: tuple[int, int]) -> None:
    n_small, n_large = sizes
    with tempfile.TemporaryDirectory(prefix="blendmesh-bench-") as tmp:
        server = EmbeddedNats(Path(tmp) / "nats")
        url = await server.start()
        bus = await Bus.open(url, "bench", "bench")
        store = JetStreamSceneStore(bus.js, "bench")
        bridge = SupervisedBridge(call_timeout=120)
        await bridge.start()
        try:
            small = await measure(n_small, repeat, bridge, store, Path(tmp))
            large = await measure(n_large, repeat, bridge, store, Path(tmp))
        finally:
            await bridge.close()
            await bus.close()
            await server.stop()
    print(f"median ms per commit over {repeat} repetitions (artifact size in KiB)")
    print(f"{'':22}{f'{n_small} objects':>12}{f'{n_large} objects':>14}{'growth':>9}")
    for name in small:
        print(f"{name:22}{small[name]:12.2f}{large[name]:14.2f}{large[name] / small[name]:8.1f}x")
    cost = "inspect + store"
    print(
        f"inspect+store per commit: {small[cost]:.2f} ms at {n_small} objects, "
        f"{large[cost]:.2f} ms at {n_large}, ratio {large[cost] / small[cost]:.1f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument(
        "--sizes", type=int, nargs=2, default=[20, 1000], metavar=("SMALL", "LARGE")
    )
    args = parser.parse_args()
    if args.repeat < 1 or not 1 <= args.sizes[0] < args.sizes[1] <= MAX_OBJECTS:
        parser.error(
            f"--repeat must be at least 1 and the sizes 1 <= SMALL < LARGE <= {MAX_OBJECTS}"
        )
    asyncio.run(main_async(args.repeat, (args.sizes[0], args.sizes[1])))


if __name__ == "__main__":
    main()
