"""How much JetStream may store, set below what the disk holds so a full store is an
error a request hears at once, not a server that stops.

nats-server stops JetStream altogether when a write fails for lack of disk space, and the
mesh then answers nothing until it is restarted. Below its ``max_file_store`` it refuses a
write instead ("insufficient resources", err_code 10023), and every request that needs
storage can say so. So the limit is what ``BLENDMESH_MAX_FILE_STORE`` allows, and never
more than the disk's free space (plus what the store already holds) less a headroom left
for the scene files, previews and logs that share the disk.
"""

from __future__ import annotations

import errno
import shutil
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from services.runtime.service.settings import SettingsError

MIB = 1024 * 1024
VARIABLE = "BLENDMESH_MAX_FILE_STORE"
HEADROOM_SHARE = 0.10  # of the space the store could use, kept free for everything else
MIN_HEADROOM = 64 * MIB
MIN_STORE = 8 * MIB  # below this JetStream cannot hold the mesh's streams and buckets
MEMORY_STORE = 256 * MIB  # memory streams are small (leases, presence); bounded all the same
UNITS = {"": 1, "K": 1024, "KB": 1024, "M": MIB, "MB": MIB, "G": 1024 * MIB, "GB": 1024 * MIB}


@dataclass(frozen=True)
class StoreLimits:
    """The limits written to nats-server's ``jetstream`` block, and why they are what
    they are (``blendmesh up`` reports it)."""

    file_store: int
    memory_store: int = MEMORY_STORE
    free: int = 0  # the disk's free space when the limits were chosen, plus the store's own
    configured: int | None = None  # BLENDMESH_MAX_FILE_STORE, when set

    def config(self) -> str:
        return f"  max_file_store: {self.file_store}\n  max_memory_store: {self.memory_store}\n"

    def report(self) -> str:
        said = f"JetStream may store {self.file_store / MIB:,.0f} MiB"
        if self.configured is not None and self.configured <= self.file_store:
            return f"{said} ({VARIABLE})"
        return f"{said} ({self.free / MIB:,.0f} MiB free, less headroom; {VARIABLE} lowers it)"


def parse_size(raw: str) -> int:
    """``"512M"``, ``"2GB"``, ``"1048576"`` -> bytes; a clear error for anything else."""
    text = raw.strip().upper().replace("IB", "B")
    number = text.rstrip("KMGB")
    unit = text[len(number) :]
    if not number.isdigit() or unit not in UNITS:
        raise SettingsError(f"{VARIABLE}={raw!r}: give bytes, or a size like 512M or 2G")
    return int(number) * UNITS[unit]


def store_limits(store_dir: Path, env: Mapping[str, str]) -> StoreLimits:
    """The limits for a store in ``store_dir``, from the disk it is on and ``env``."""
    raw = env.get(VARIABLE, "").strip()
    configured = parse_size(raw) if raw else None
    if configured is not None and configured < MIN_STORE:
        raise SettingsError(f"{VARIABLE}={raw!r} is under the {MIN_STORE // MIB} MiB it needs")
    store_dir.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(store_dir).free + _size(store_dir)
    room = max(free - max(MIN_HEADROOM, int(free * HEADROOM_SHARE)), MIN_STORE)
    limit = room if configured is None else min(configured, room)
    return StoreLimits(file_store=limit, free=free, configured=configured)


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


INSUFFICIENT_RESOURCES = 10023  # JetStream's err_code for a write over its store limits


def store_full(exc: BaseException) -> bool:
    """Whether JetStream refused a write because its store is at its limits: ``exc``, or
    what it was raised from or while handling (a few links deep)."""
    from nats.js.errors import APIError  # the CLI imports this module only on failure

    return any(
        isinstance(seen, APIError) and seen.err_code == INSUFFICIENT_RESOURCES
        for seen in _chain(exc)
    )


def out_of_room(exc: BaseException) -> bool:
    """Whether a write failed for lack of room: JetStream's store is full, or the disk is
    (a file's ``ENOSPC``, SQLite's "database or disk is full")."""
    if store_full(exc):
        return True
    for seen in _chain(exc):
        if isinstance(seen, OSError) and seen.errno == errno.ENOSPC:
            return True
        if isinstance(seen, sqlite3.OperationalError) and "disk is full" in str(seen):
            return True
    return False


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and what it was raised from or while handling, ``CHAIN_DEPTH`` links at most
    (a chain may loop)."""
    found: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and len(found) < CHAIN_DEPTH:
        found.append(seen)
        seen = seen.__cause__ or seen.__context__
    return found


CHAIN_DEPTH = 8


STORE_FULL = (
    "the mesh cannot store this request: JetStream's store is full. Free disk space where "
    f"the mesh keeps its home, or raise {VARIABLE}, and try again; nothing it stored is lost"
)


def refusing(seconds: float) -> str:
    """What a service says of itself while storage refuses its writes (``out_of_room``)."""
    return (
        f"its writes are refused for {seconds:.0f} s: JetStream's store or the disk is "
        f"full. Free disk space where the mesh keeps its home, or raise {VARIABLE}; the "
        "work goes on by itself once there is room"
    )


def unstored(seconds: float) -> str:
    """What a service says of itself while JetStream stores none of its writes
    (``quorum.log_unavailable``): a stream without a leader, or too few servers."""
    return (
        f"JetStream has stored none of its writes for {seconds:.0f} s: a stream has no "
        "leader (a server stopped, or too few answer). `blendmesh status` shows the "
        "servers; the work goes on by itself once the stream has a leader again"
    )
