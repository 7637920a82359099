"""What the executor's look for a cancel costs: one direct get of a run's
``cancel_requested`` subject, as ``CancelWatch`` makes once per operation.

    .venv/bin/python bench/cancel_look.py [--looks 500]

Times the look on a run with no cancel (every run's case) and on one with a cancel in the
log, on an embedded nats-server. The executor starts each look as an operation starts and
reads it when the operation ends, so a run waits for a look only when its operation is
quicker than the look; ``bench/run_latency.py`` prints what an operation takes.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contracts.events import CancelRequested, RunRequested, follow
from services.runtime.nats.history import last_of
from services.runtime.server.embedded import EmbeddedNats
from services.runtime.service.host import Bus
from services.runtime.service.publishers import JetStreamPipeline

PREFIX = "bench"


def request(run_id: str) -> RunRequested:
    return RunRequested(
        event_id=f"req-{run_id}", at=0.0, run_id=run_id, request_id=run_id,
        thread_id=run_id, user="ana", scene_id="s", prompt="add a cube",
    )  # fmt: skip


async def timed(bus: Bus, run_id: str, looks: int) -> list[float]:
    times = []
    for _ in range(looks):
        start = time.perf_counter()
        await last_of(bus.js, PREFIX, run_id, "cancel_requested")
        times.append((time.perf_counter() - start) * 1e3)
    return sorted(times)


async def measure(looks: int) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory(prefix="blendmesh-bench-") as tmp:
        async with EmbeddedNats(Path(tmp) / "nats") as server:
            bus = await Bus.open(server.url, PREFIX, "bench")
            try:
                pipeline = JetStreamPipeline(bus.js, PREFIX)
                kept, cancelled = request("kept"), request("cancelled")
                for event in (kept, cancelled):
                    await pipeline.send(event)
                await pipeline.send(follow(cancelled, CancelRequested, 1.0, cancelled_by="ana"))
                await pipeline.settle(timeout=60)
                assert await last_of(bus.js, PREFIX, "kept", "cancel_requested") is None
                found = await last_of(bus.js, PREFIX, "cancelled", "cancel_requested")
                assert isinstance(found, CancelRequested)
                await timed(bus, "kept", 20)  # warm the connection
                return {
                    "no cancel in the log": await timed(bus, "kept", looks),
                    "a cancel in the log": await timed(bus, "cancelled", looks),
                }
            finally:
                await bus.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--looks", type=int, default=500)
    args = parser.parse_args()
    rows = asyncio.run(measure(max(args.looks, 1)))
    print(f"cancel look, ms over {args.looks} looks")
    print(f"{'':>22}{'p50':>8}{'p99':>8}")
    for name, times in rows.items():
        p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
        print(f"{name:>22}{statistics.median(times):8.3f}{p99:8.3f}")
    print(f"cancel look p50: {statistics.median(rows['no cancel in the log']):.3f} ms")


if __name__ == "__main__":
    main()
