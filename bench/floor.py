"""The floor under a run: what one durable write costs on this machine, and how many a run makes.

    .venv/bin/python bench/floor.py [--repeat 200] [--batch 21 117]

Rows, each measured in this one run on a real nats-server started as the mesh starts it
(JetStream on a file store, ``sync_interval: always``):

- ``fsync 4 KiB``: one 4 KiB write and its fsync, in the server's own store folder;
- ``publish+ack``: one message published to a file stream and its acknowledgement awaited,
  from a bare client (no mesh on the loop);
- ``N one by one`` against ``N as one batch``: the same N messages published each with its
  acknowledgement awaited, against one atomic batch (ADR-50, the stream's ``allow_atomic``),
  whose commit is acknowledged once for all of them;
- ``fsyncs per publish`` and ``fsyncs per batch of N``: counted by ``strace`` on the
  server's process (fsync and fdatasync), where strace is installed and may attach.

``fsyncs_during`` is what bench/table.py uses to count the fsyncs of one run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import re
import shutil
import signal
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import nats
from nats.aio.client import Client

from services.runtime.server.embedded import EmbeddedNats

MAX_BATCH = 1000  # nats-server's own limit on the messages of one atomic batch (ADR-50)
PAYLOAD = b"x" * 512  # about an event's size on the run's path
COUNTED = 20  # publishes whose fsyncs are counted
STRACE_SETTLE = 0.3  # seconds for strace to attach to every thread before counting


def fsync_ms(folder: Path, repeat: int) -> float:
    """Median milliseconds of one 4 KiB write and its fsync in ``folder``."""
    block = os.urandom(4096)
    samples = []
    fd = os.open(folder / "fsync-probe", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for _ in range(repeat):
            started = time.perf_counter()
            os.write(fd, block)
            os.fsync(fd)
            samples.append(time.perf_counter() - started)
    finally:
        os.close(fd)
        (folder / "fsync-probe").unlink()
    return statistics.median(samples) * 1000


async def create_stream(nc: Client, name: str, atomic: bool) -> None:
    """A file stream on ``name.>``; with ``atomic`` it takes atomic batches. Through the
    JetStream API's own request, since nats-py's StreamConfig has no ``allow_atomic``."""
    config = {
        "name": name,
        "subjects": [f"{name}.>"],
        "storage": "file",
        "num_replicas": 1,
        "allow_atomic": atomic,
    }
    answer = await nc.request(f"$JS.API.STREAM.CREATE.{name}", json.dumps(config).encode(), 5)
    reply = json.loads(answer.data)
    if "error" in reply:
        raise RuntimeError(f"cannot create stream {name}: {reply['error']}")
    if atomic and not reply.get("config", {}).get("allow_atomic"):
        raise RuntimeError(f"nats-server ignored allow_atomic on {name}: too old for ADR-50")


async def publish_one(nc: Client, subject: str) -> None:
    answer = await nc.request(subject, PAYLOAD, 5)
    if b'"error"' in answer.data:
        raise RuntimeError(f"publish to {subject} refused: {answer.data!r}")


async def publish_batch(nc: Client, subject: str, n: int) -> dict[str, Any]:
    """``n`` messages as one atomic batch; the commit's acknowledgement."""
    if not 1 <= n <= MAX_BATCH:
        raise ValueError(f"a batch holds 1 to {MAX_BATCH} messages, not {n}")
    batch = uuid.uuid4().hex
    for seq in range(1, n):
        headers = {"Nats-Batch-Id": batch, "Nats-Batch-Sequence": str(seq)}
        await nc.publish(subject, PAYLOAD, headers=headers)
    headers = {"Nats-Batch-Id": batch, "Nats-Batch-Sequence": str(n), "Nats-Batch-Commit": "1"}
    answer = await nc.request(subject, PAYLOAD, 5, headers=headers)
    ack: dict[str, Any] = json.loads(answer.data)
    if "error" in ack or ack.get("count") != n:
        raise RuntimeError(f"batch of {n} not stored whole: {ack}")
    return ack


async def timed(repeat: int, action: Callable[[], Awaitable[object]]) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        await action()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


@contextlib.asynccontextmanager
async def fsyncs_during(pid: int | None) -> AsyncIterator[list[int]]:
    """Count the fsync and fdatasync calls of process ``pid`` (all its threads) while the
    block runs; the count is appended to the yielded list on exit, nothing when strace is
    missing or may not attach (the caller says so instead of printing a figure)."""
    counted: list[int] = []
    strace = shutil.which("strace")
    if pid is None or strace is None:
        yield counted
        return
    with tempfile.NamedTemporaryFile(prefix="blendmesh-strace-", suffix=".txt") as out:
        args = [strace, "-f", "-c", "-e", "trace=fsync,fdatasync", "-o", out.name, "-p", str(pid)]
        proc = await asyncio.create_subprocess_exec(
            *args, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
        )
        await asyncio.sleep(STRACE_SETTLE)
        try:
            yield counted
        finally:
            if proc.returncode is None:
                proc.send_signal(signal.SIGINT)
            _, err = await proc.communicate()
            summary = await asyncio.to_thread(Path(out.name).read_text, errors="replace")
            calls = summed_calls(summary)
            if calls is not None and b"Operation not permitted" not in err:
                counted.append(calls)


def summed_calls(summary: str) -> int | None:
    """The calls of ``strace -c``'s summary table, summed over its syscalls; None when
    the table is missing (strace could not attach)."""
    total = 0
    found = False
    for line in summary.splitlines():
        match = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(fsync|fdatasync)$", line)
        if match:
            total += int(match.group(1))
            found = True
        elif line.strip().endswith("total"):
            found = True
    return total if found else None


async def floor_rows(repeat: int, batches: list[int], folder: Path) -> list[tuple[str, str]]:
    """The floor's rows, (name, measured), from a nats-server of its own in ``folder``."""
    server = EmbeddedNats(folder / "nats")
    url = await server.start()
    nc = await nats.connect(url)
    rows: list[tuple[str, str]] = []
    try:
        await create_stream(nc, "FLOOR", atomic=False)
        await create_stream(nc, "BATCH", atomic=True)
        disk = await asyncio.to_thread(fsync_ms, folder / "nats", repeat)
        ack = await timed(repeat, lambda: publish_one(nc, "FLOOR.one"))
        rows.append(("fsync of a 4 KiB write, p50", f"{disk:.3f} ms"))
        rows.append(("publish + ack from a bare client, p50", f"{ack:.3f} ms ({ack / disk:.1f}x)"))
        async with fsyncs_during(server.pid) as per_publish:
            for _ in range(COUNTED):
                await publish_one(nc, "FLOOR.one")
        if per_publish:
            rows.append(("nats-server fsyncs per publish", f"{per_publish[0] / COUNTED:.1f}"))
        rounds = max(3, repeat // 20)
        for n in batches:
            singles = await timed(rounds, functools.partial(each, nc, n))
            batched = await timed(rounds, functools.partial(publish_batch, nc, "BATCH.many", n))
            rows.append(
                (
                    f"{n} messages one by one / as one atomic batch, p50",
                    f"{singles:.2f} / {batched:.2f} ms ({singles / batched:.1f}x)",
                )
            )
            async with fsyncs_during(server.pid) as per_batch:
                await publish_batch(nc, "BATCH.many", n)
            if per_batch:
                rows.append((f"nats-server fsyncs per atomic batch of {n}", str(per_batch[0])))
        if shutil.which("strace") is None:
            rows.append(("fsync counts", "not counted: strace is not installed"))
    finally:
        await nc.close()
        await server.stop()
    return rows


async def each(nc: Client, n: int) -> None:
    for _ in range(n):
        await publish_one(nc, "FLOOR.many")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200, help="samples per row (10-5000)")
    parser.add_argument("--batch", type=int, nargs="+", default=[21, 117], help="batch sizes")
    args = parser.parse_args()
    if not 10 <= args.repeat <= 5000:
        parser.error("--repeat takes 10 to 5000 samples")
    if any(not 1 <= n <= MAX_BATCH for n in args.batch):
        parser.error(f"--batch sizes are 1 to {MAX_BATCH} (nats-server's limit)")
    with tempfile.TemporaryDirectory(prefix="blendmesh-floor-") as tmp:
        rows = asyncio.run(floor_rows(args.repeat, args.batch, Path(tmp)))
    print(f"the floor under a run, {args.repeat} samples per row")
    for name, measured in rows:
        print(f"| {name} | {measured} |")


if __name__ == "__main__":
    main()
