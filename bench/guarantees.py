"""What the executor's guarantees cost per operation, and how that grows with the scene.

    .venv/bin/python bench/guarantees.py [--repeat 20] [--sizes 20 1000]

For a 20-object and a 1000-object scene (``--sizes``), measured in one run on the real
bridge and a real nats-server: the scene fingerprint taken after every mutating operation
(from the bridge's digest cache, right after a transform dropped one object's digest), the
same hash recomputed in full (what every operation paid before ADR 0012, and what a commit
pays now), the journal entry written to JetStream KV for every committed operation,
writing a checkpoint (.blend) and restoring one (what a failed operation or a commit
costs), and one tool call for scale.
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

from contracts.receipts import Receipt
from services.executor.adapters.kv_journal import KvJournal
from services.executor.adapters.supervisor import SupervisedBridge
from services.executor.domain.journal import JournalEntry, op_key
from services.runtime.server.embedded import EmbeddedNats
from services.runtime.service.host import Bus

MAX_OBJECTS = 5000  # objects built in the larger scene, one tool call each
PRIMS = ["cube", "uv_sphere", "ico_sphere", "cylinder", "cone", "plane", "torus", "monkey"]


async def timed(repeat: int, action: Callable[[int], Awaitable[object]]) -> float:
    samples = []
    for i in range(repeat):
        started = time.perf_counter()
        await action(i)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


async def measure(
    objects: int, repeat: int, bridge: SupervisedBridge, journal: KvJournal, work: Path
) -> dict[str, float]:
    await bridge.reset()
    for i in range(objects):
        await bridge.call_tool(
            "object.create",
            {
                "primitive": PRIMS[i % len(PRIMS)],
                "name": f"O{i:04d}",
                "location": [i % 40 * 2.0, i // 40 * 2.0, 0],
            },
            f"c{i}",
        )
    checkpoint = work / f"ck{objects}.blend"
    receipt = Receipt(
        operation_id="op",
        tool_name="object.transform",
        safety_level="safe_write",
        status="succeeded",
        scene_hash_before="a" * 64,
        scene_hash_after="b" * 64,
    )

    async def tool(i: int) -> object:
        return await bridge.call_tool(
            "object.transform", {"name": "O0000", "location": [i, 0, 0]}, f"t{i}"
        )

    async def put(i: int) -> None:
        await journal.put(
            op_key("bench", "bench", f"bench-{objects}", f"op{i}"),
            JournalEntry(
                request_id="r",
                operation_id=f"op{i}",
                args_digest="d",
                run_id="run",
                receipt=receipt,
            ),
        )

    async def fingerprint_after_tool(i: int) -> float:
        await tool(i)
        started = time.perf_counter()
        await bridge.fingerprint()
        return time.perf_counter() - started

    return {
        "tool call": await timed(repeat, tool),
        "fingerprint": statistics.median([await fingerprint_after_tool(i) for i in range(repeat)])
        * 1000,
        "full fingerprint": await timed(repeat, lambda i: bridge.fingerprint_full()),
        "journal put": await timed(repeat, put),
        "checkpoint write": await timed(repeat, lambda i: bridge.save(str(checkpoint))),
        "checkpoint restore": await timed(repeat, lambda i: bridge.load(str(checkpoint))),
    }


async def main_async(repeat: int, sizes: tuple[int, int]) -> None:
    n_small, n_large = sizes
    with tempfile.TemporaryDirectory(prefix="blendmesh-bench-") as tmp:
        server = EmbeddedNats(Path(tmp) / "nats")
        url = await server.start()
        bus = await Bus.open(url, "bench", "bench")
        bridge = SupervisedBridge(call_timeout=120)
        await bridge.start()
        try:
            small = await measure(n_small, repeat, bridge, KvJournal(bus.js, "bench"), Path(tmp))
            large = await measure(n_large, repeat, bridge, KvJournal(bus.js, "bench"), Path(tmp))
        finally:
            await bridge.close()
            await bus.close()
            await server.stop()
    print(f"median ms per operation over {repeat} repetitions")
    print(f"{'':22}{f'{n_small} objects':>12}{f'{n_large} objects':>14}{'growth':>9}")
    for name in small:
        print(f"{name:22}{small[name]:12.2f}{large[name]:14.2f}{large[name] / small[name]:8.1f}x")
    per_op = {
        n: figures["fingerprint"] + figures["journal put"]
        for n, figures in ((n_small, small), (n_large, large))
    }
    print(
        f"every committed operation pays fingerprint + journal: "
        f"{per_op[n_small]:.2f} ms at {n_small} objects, {per_op[n_large]:.2f} ms at {n_large}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=20)
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
