"""Whether JetStream still works under a running mesh.

When a write fails for lack of disk space (a disk filled past ``max_file_store`` by
something else), nats-server marks that stream's store failed ("critical write error")
and the stream answers no write again, even once space is freed; some versions disable
JetStream altogether. Every request then times out while the services look alive.
``blendmesh up`` waits on ``stopped`` beside its services, so it ends loudly and a
supervisor starts the mesh afresh; for the server it runs, ``store_guard`` waits on
``write_failed`` and restarts the server itself, refusing writes until there is room
again. Everything JetStream acknowledged is on disk (``sync_interval: always``).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from nats.errors import Error as NatsError
from nats.js import JetStreamContext

log = logging.getLogger("blendmesh.jetstream")

INTERVAL = 5.0  # seconds between two looks
MISSES = 4  # looks in a row without an answer before JetStream counts as stopped:
# one slow answer on a busy machine is not a stop; 20 s of none is


async def stopped(js: JetStreamContext, interval: float = INTERVAL, misses: int = MISSES) -> str:
    """Return, saying so, once JetStream has not answered ``misses`` looks in a row;
    never while it answers."""
    missed = 0
    while True:
        await asyncio.sleep(interval)
        try:
            await asyncio.wait_for(js.account_info(), interval)
            missed = 0
            continue
        except (NatsError, TimeoutError) as exc:
            missed += 1
            said = str(exc) or type(exc).__name__
            log.warning("JetStream did not answer (%s); %d of %d", said, missed, misses)
        if missed >= misses:
            return (
                f"JetStream stopped answering ({said}); nats-server stops it when its disk is "
                "full: free space where the mesh keeps its home"
            )


FAILED_WRITE = "critical write error"  # nats-server's words when a store cannot write
LOG_READ = 64 * 1024  # bytes of new log read per look, at most


async def write_failed(log_path: Path, interval: float = 1.0) -> str:
    """Return, quoting it, the first line of the server's log (from now on) saying that a
    store could not write; never while none does."""
    offset = await asyncio.to_thread(_size, log_path)
    while True:
        await asyncio.sleep(interval)
        text, offset = await asyncio.to_thread(_read_from, log_path, offset)
        for line in text.splitlines():
            if FAILED_WRITE in line.lower():
                said = line.split("[ERR] ", 1)[-1].strip()
                return f"JetStream could not write ({said})"


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _read_from(path: Path, offset: int) -> tuple[str, int]:
    try:
        with path.open("rb") as log_file:
            log_file.seek(offset)
            data = log_file.read(LOG_READ)
    except OSError:
        return "", offset
    # A line still being written is read whole at a later look; one longer than a read
    # is taken as it is, so the watch always moves on.
    whole = data[: data.rfind(b"\n") + 1] or (data if len(data) == LOG_READ else b"")
    return whole.decode(errors="replace"), offset + len(whole)
