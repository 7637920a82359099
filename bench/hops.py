"""Where a run's wall time goes between services: every span of its trace on one clock.

    .venv/bin/python bench/hops.py [--runs 20] [--ops 1]

One embedded mesh, warm, on bench/plan25.py's 20-object scene. Every span of a run's trace
(the client's, each service's handler, what they open inside) is placed on the run's own
clock, from the client's start: for each span name, the p50 of when it starts and how long
it lasts, over ``--runs`` runs of ``--ops`` operations (1 or 25). A gap between one
service's end and the next one's start is the bus and the consumer's fetch; a span that
ends after the client's is off the run's path.

Then the CPU each kind of process spent per run (``bench/proctree.py``: this process runs
every service and the client on one event loop, the bridges are Blender), which with the
round trips is what a run's wall time is made of; and the round trips to nats-server per
run, by kind, from every service and the client in this process (``Client.request``: each
publish to a stream, KV or object store waits for its fsync; each read, consumer creation
and ``ack_sync`` for its answer). Like the fsyncs, these counts do not move with the
machine's load, so they compare before and after a change to a run's path (ADR 0075).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import re
import statistics
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import proctree
from nats.aio.client import Client
from plan25 import plan25, setup_plans
from stages import Spans
from table import PREVIEWS, one_op, timed_runs

from services.doors.cli.mesh import Mesh
from services.doors.core.client import MeshClient
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings

MAX_RUNS = 500
ROOT = "blendmesh run"
API = re.compile(r"^\$JS\.API\.((?:DIRECT\.GET|STREAM\.MSG\.GET|[A-Z]+\.[A-Z]+))\.([^.]+)")


def kind_of(subject: str) -> str:
    """A request's kind: the JetStream API call and its stream, the store a message is
    written to, or an acknowledgement."""
    if match := API.match(subject):
        return f"{match.group(1).lower()} {match.group(2)}"
    if subject.startswith("$JS.ACK."):
        return "ack_sync"
    if subject.startswith(("$KV.", "$O.")):
        store, bucket = subject.split(".")[:2]
        return f"write {'KV' if store == '$KV' else 'object'} {bucket}"
    return "publish event " + subject.rsplit(".", 1)[-1]


@contextlib.contextmanager
def counted_requests() -> Iterator[collections.Counter[str]]:
    """Count every ``Client.request`` of this process by kind while the block runs."""
    counts: collections.Counter[str] = collections.Counter()
    original = Client.request

    async def request(self: Client, subject: str, *args: Any, **kwargs: Any) -> Any:
        counts[kind_of(subject)] += 1
        return await original(self, subject, *args, **kwargs)

    Client.request = request  # type: ignore[method-assign]
    try:
        yield counts
    finally:
        Client.request = original  # type: ignore[method-assign]


Placed = dict[str, list[tuple[float, float]]]


Measured = tuple[list[float], Placed, collections.Counter[str], dict[str, tuple[int, float]]]


async def measure(runs: int, ops: int) -> Measured:
    """The client's seconds per run, per span name its (start, length) in seconds on its
    run's clock, the requests made during the runs by kind, and the CPU seconds each kind
    of process spent meanwhile (``proctree.cpu_by_kind``)."""
    with tempfile.TemporaryDirectory(prefix="blendmesh-hops-") as home:
        settings = Settings(home=Path(home), prefix="bench", user="bench", previews=PREVIEWS)
        async with Mesh(settings) as mesh:
            bus = await Bus.open(mesh.url, settings.prefix, "bench", mesh.login("client"))
            client = MeshClient(bus)
            for plan in setup_plans(20):
                await timed_runs(client, "small", [plan], len(plan["operations"]))
            await timed_runs(client, "small", [plan25(0)], 25)
            await timed_runs(client, "small", [one_op(0)], 1)
            spans = Spans(settings)
            plans = [one_op(i) for i in range(1, runs + 1)] if ops == 1 else None
            plans = plans or [plan25(i) for i in range(1, runs + 1)]
            before = proctree.snapshot()
            with counted_requests() as requests:
                seconds = await timed_runs(client, "small", plans, ops)
                # Before the wait: a run's work that goes on after its result (the audit's
                # last records, its preview) is counted for the runs before the first.
                cpu = proctree.cpu_by_kind(before, proctree.snapshot())
                await asyncio.sleep(1.0)  # the audit's last records come after the result
            finished = spans.exporter.get_finished_spans()
            spans.close()
            await bus.close()
    traces: dict[int, list] = collections.defaultdict(list)
    for span in finished:
        if span.start_time and span.end_time:
            traces[span.context.trace_id].append(span)
    placed: Placed = collections.defaultdict(list)
    for trace in traces.values():
        roots = [s for s in trace if s.name == ROOT]
        if not roots:
            continue  # a trace of something other than a run (a preview, a ping)
        origin = roots[0].start_time
        for span in trace:
            start, length = (span.start_time - origin) / 1e9, (span.end_time - span.start_time)
            placed[span.name].append((start, length / 1e9))
    return seconds, placed, requests, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help=f"runs timed (1-{MAX_RUNS})")
    parser.add_argument("--ops", type=int, default=1, choices=(1, 25), help="operations a run")
    args = parser.parse_args()
    if not 1 <= args.runs <= MAX_RUNS:
        parser.error(f"--runs takes 1 to {MAX_RUNS}")
    seconds, placed, requests, cpu = asyncio.run(measure(args.runs, args.ops))
    print(f"{args.ops}-operation runs, {args.runs} runs, previews {'on' if PREVIEWS else 'off'}")
    print(f"client end to end p50 {statistics.median(seconds) * 1e3:.1f} ms")
    print(f"{'span':64}{'start ms':>9}{'ms':>8}{'n/run':>7}")
    rows = sorted(placed.items(), key=lambda kv: statistics.median(s for s, _ in kv[1]))
    for name, found in rows:
        start = statistics.median(s for s, _ in found)
        length = statistics.median(n for _, n in found)
        print(f"{name[:64]:64}{start * 1e3:9.2f}{length * 1e3:8.2f}{len(found) / args.runs:7.1f}")
    print(f"\n{'CPU per run, by kind of process [processes]':64}{'ms':>9}")
    for kind, (count, used) in cpu.items():
        label = kind if kind == proctree.OUTSIDE else f"{kind} [{count}]"
        print(f"{label:64}{used / args.runs * 1e3:9.1f}")
    print(f"\n{'round trips to nats-server, by kind':64}{'per run':>9}")
    for kind, calls in sorted(requests.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"{kind[:64]:64}{calls / args.runs:9.1f}")
    print(f"round trips per run: {sum(requests.values()) / args.runs:.1f}")


if __name__ == "__main__":
    main()
