"""The gateway's ownership check: the in-memory index against a scan of the log, from one run.

    .venv/bin/python bench/ownership.py [--runs 1000 5000]

For each log size, publishes that many run requests (three users, one thread and one scene
each), then times the lookup every thread-continuing HTTP request makes: reading every
``requested`` event (what the gateway did before) against ``LogOwners.current()`` (the
index, already caught up, which checks the log's newest event and answers).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nats.js.api import DeliverPolicy

from contracts import subjects
from contracts.events import RunRequested, decode_event
from services.runtime.server.embedded import EmbeddedNats
from services.runtime.service.host import Bus
from services.runtime.service.owners import LogOwners
from services.runtime.service.publishers import JetStreamPipeline

PREFIX = "bench"
REPEAT = 9


def request(i: int) -> RunRequested:
    return RunRequested(
        event_id=f"req-{i}",
        at=float(i),
        run_id=f"run{i}",
        request_id=f"r{i}",
        thread_id=f"thread{i}",
        user=f"user{i % 3}",
        scene_id=f"scene{i}",
        prompt="add a cube",
    )


async def scan_owner(bus: Bus, thread_id: str) -> str | None:
    """The old lookup: every ``requested`` event of the log, through an ordered consumer."""
    sub = await bus.js.subscribe(
        subjects.any_run(PREFIX, "requested"),
        ordered_consumer=True,
        deliver_policy=DeliverPolicy.ALL,
        stream=subjects.stream_name(PREFIX),
    )
    owner = None
    try:
        while True:
            msg = await sub.next_msg(timeout=10)
            event = decode_event(msg.data)
            if owner is None and isinstance(event, RunRequested) and event.thread_id == thread_id:
                owner = event.user
            if msg.metadata.num_pending == 0:
                return owner
    finally:
        await sub.unsubscribe()


async def median_ms(lookup: Callable[[], Awaitable[object]]) -> float:
    times = []
    for _ in range(REPEAT):
        start = time.perf_counter()
        await lookup()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


async def measure(sizes: list[int]) -> list[tuple[int, float, float]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="blendmesh-bench-") as tmp:
        async with EmbeddedNats(Path(tmp) / "nats") as server:
            bus = await Bus.open(server.url, PREFIX, "bench")
            owners = LogOwners(bus, catch_up_timeout=60)
            published = 0
            try:
                for size in sizes:
                    pipeline = JetStreamPipeline(bus.js, PREFIX)
                    for i in range(published, size):
                        await pipeline.send(request(i))
                    await pipeline.settle(timeout=120)
                    published = size
                    await owners.current()  # the index catches up once, as it would live
                    target = f"thread{size - 1}"
                    scan = await median_ms(functools.partial(scan_owner, bus, target))
                    index = await median_ms(owners.current)
                    assert (await owners.current()).threads[target] == await scan_owner(bus, target)
                    rows.append((size, scan, index))
            finally:
                await owners.close()
                await bus.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[1000, 5000])
    args = parser.parse_args()
    rows = asyncio.run(measure(sorted(args.runs)))
    print(f"thread-owner lookup, median ms over {REPEAT} lookups")
    print(f"{'runs in the log':>16}{'scan':>10}{'index':>10}{'ratio':>9}")
    for size, scan, index in rows:
        print(f"{size:>16}{scan:10.2f}{index:10.2f}{scan / index:8.0f}x")
    size, scan, index = rows[-1]
    print(f"index speed-up at {size} runs: {scan / index:.0f}x")


if __name__ == "__main__":
    main()
