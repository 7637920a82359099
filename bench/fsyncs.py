"""Where a run's durable writes go: nats-server's fsyncs per run, store by store.

    .venv/bin/python bench/fsyncs.py [--runs 5]

One embedded mesh, warm, on bench/plan25.py's 20-object scene; ``--runs`` one-operation
runs and as many 25-operation runs, back to back, each row counted while its runs go on
by ``strace -f -y`` on the nats-server process (fsync and fdatasync; ``-y`` names the file
of each call). A call is charged to the store its file sits in: a stream's messages (the
event log, the audit stream, a KV bucket or an object store) or a durable consumer's
state. Fsyncs count the same on a busy machine and a quiet one, unlike latencies, so this
is the figure to compare before and after a change to the write path (ADR 0069).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import re
import shutil
import signal
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from plan25 import plan25, setup_plans
from table import PREVIEWS, one_op, timed_runs

from services.doors.cli.mesh import Mesh
from services.doors.core.client import MeshClient
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings

STRACE_SETTLE = 0.3  # seconds for strace to attach to every thread before counting
CALL = re.compile(r"^\d+\s+(?:fsync|fdatasync)\((\d+)<([^>]*)>")


def store_of(path: str) -> str:
    """The store a file of nats-server's JetStream folder belongs to: ``consumer NAME``
    for a durable consumer's state, else the stream's name (KV_ and OBJ_ streams are
    buckets), or the path's last part when it is outside any stream."""
    parts = Path(path).parts
    if "streams" not in parts:
        return Path(path).name or path
    at = parts.index("streams")
    stream = parts[at + 1] if len(parts) > at + 1 else "(streams folder)"
    if "obs" in parts[at:]:
        obs = parts.index("obs", at)
        consumer = parts[obs + 1] if len(parts) > obs + 1 else "(consumers folder)"
        return f"consumer {consumer}"
    return stream


@contextlib.asynccontextmanager
async def fsyncs_by_store(pid: int | None) -> AsyncIterator[collections.Counter[str]]:
    """Count the fsyncs of process ``pid`` per store while the block runs; the counter
    stays empty when strace is missing or may not attach."""
    counted: collections.Counter[str] = collections.Counter()
    strace = shutil.which("strace")
    if pid is None or strace is None:
        yield counted
        return
    with tempfile.NamedTemporaryFile(prefix="blendmesh-strace-", suffix=".txt") as out:
        args = [strace, "-f", "-y", "-e", "trace=fsync,fdatasync", "-o", out.name, "-p", str(pid)]
        proc = await asyncio.create_subprocess_exec(
            *args, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
        )
        await asyncio.sleep(STRACE_SETTLE)
        try:
            yield counted
        finally:
            if proc.returncode is None:
                proc.send_signal(signal.SIGINT)
            await proc.wait()
            text = await asyncio.to_thread(Path(out.name).read_text, errors="replace")
            for line in text.splitlines():
                if match := CALL.match(line):
                    counted[store_of(match.group(2))] += 1


async def measure(runs: int) -> dict[str, collections.Counter[str]]:
    rows: dict[str, collections.Counter[str]] = {}
    with tempfile.TemporaryDirectory(prefix="blendmesh-fsyncs-") as home:
        settings = Settings(home=Path(home), prefix="bench", user="bench", previews=PREVIEWS)
        async with Mesh(settings) as mesh:
            bus = await Bus.open(mesh.url, settings.prefix, "bench", mesh.login("client"))
            client = MeshClient(bus)
            for plan in setup_plans(20):
                await timed_runs(client, "small", [plan], len(plan["operations"]))
            await timed_runs(client, "small", [plan25(0)], 25)
            await timed_runs(client, "small", [one_op(0)], 1)
            for name, plans, ops in (
                ("one-operation run", [one_op(i) for i in range(1, runs + 1)], 1),
                ("25-operation run", [plan25(i) for i in range(1, runs + 1)], 25),
            ):
                async with fsyncs_by_store(mesh.server_pid) as counted:
                    await timed_runs(client, "small", plans, ops)
                rows[name] = counted
            await bus.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs counted per row (1-100)")
    args = parser.parse_args()
    if not 1 <= args.runs <= 100:
        parser.error("--runs takes 1 to 100 runs per row")
    rows = asyncio.run(measure(args.runs))
    print(f"nats-server fsyncs counted over {args.runs} runs per row")
    if shutil.which("strace") is None:
        print("not counted: strace is not installed")
    for name, counted in rows.items():
        if not counted:
            print(f"{name}: not counted (strace may not attach to nats-server here)")
            continue
        print(f"\n{name}, fsyncs per run over {args.runs} runs, by store")
        for store, calls in counted.most_common():
            print(f"| {store} | {calls / args.runs:.1f} |")
        print(f"| total | {sum(counted.values()) / args.runs:.1f} |")
    per_run = " / ".join(
        f"{sum(c.values()) / args.runs:.1f}" if c else "not counted" for c in rows.values()
    )
    print(f"\nfsyncs per run, one operation / 25 operations: {per_run}")


if __name__ == "__main__":
    main()
