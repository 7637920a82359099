"""CPU time of this process and everything it started, by kind of process, from /proc.

A benchmark takes a ``snapshot()`` before and after its timed window; ``cpu_by_kind``
turns the two into seconds of CPU each kind of process used in between. A process that
started in the window counts from zero; one that ended in it is not counted. The machine's
other programs are counted too (all CPU time the machine spent, less this benchmark's):
on a shared machine they take cores the benchmark would use.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")
PROC = Path("/proc")

OUTSIDE = "not this bench"  # the machine's other programs
# Printed in this order; a process of none of these kinds is "other".
KINDS = (
    "this process",
    "nats-server",
    "executor process",
    "bridge (runs)",
    "preview bridge",
    "other",
    OUTSIDE,
)


@dataclass(frozen=True)
class Snapshot:
    processes: dict[int, tuple[str, float]]  # pid -> (kind, seconds of CPU so far)
    machine: float  # seconds of CPU every program on the machine used so far


def _machine() -> float:
    """CPU seconds the machine spent on anything but idling, summed over its cores."""
    fields = [int(f) for f in (PROC / "stat").read_text().split("\n", 1)[0].split()[1:]]
    # user nice system idle iowait irq softirq steal (guest time is already in user)
    return (sum(fields[:8]) - fields[3] - fields[4]) / TICK


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, user + system CPU seconds) of ``pid``; None when it is gone."""
    try:
        fields = (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    # After the command name: state, ppid, ... utime is the 12th field, stime the 13th.
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK


def _kind(pid: int) -> str:
    if pid == os.getpid():
        return "this process"
    try:
        argv = (PROC / str(pid) / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return "other"
    if any(a.endswith(b"nats-server") for a in argv):
        return "nats-server"
    if b"services.bridge" in argv:
        # The preview worker's bridge runs at a lower CPU priority than its executor.
        try:
            lowered = os.getpriority(os.PRIO_PROCESS, pid) > os.getpriority(os.PRIO_PROCESS, 0)
        except OSError:
            return "other"
        return "preview bridge" if lowered else "bridge (runs)"
    if b"services.executor" in argv:
        return "executor process"
    return "other"


def snapshot() -> Snapshot:
    """CPU seconds of this process and of all its descendants, and of the machine, now."""
    machine = _machine()
    stats: dict[int, tuple[int, float]] = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None:
            stats[int(entry.name)] = stat
    children: dict[int, list[int]] = defaultdict(list)
    for pid, (ppid, _) in stats.items():
        children[ppid].append(pid)
    found: dict[int, tuple[str, float]] = {}
    todo = [os.getpid()]
    while todo:
        pid = todo.pop()
        if pid in stats:
            found[pid] = (_kind(pid), stats[pid][1])
            todo.extend(children[pid])
    return Snapshot(found, machine)


def cpu_by_kind(before: Snapshot, after: Snapshot) -> dict[str, tuple[int, float]]:
    """Kind -> (processes, CPU seconds used between the two snapshots); the machine's
    other programs are one kind with no count of processes."""
    totals: dict[str, tuple[int, float]] = {}
    for pid, (kind, seconds) in after.processes.items():
        count, used = totals.get(kind, (0, 0.0))
        start = before.processes[pid][1] if pid in before.processes else 0.0
        totals[kind] = (count + 1, used + seconds - start)
    ours = sum(used for _, used in totals.values())
    totals[OUTSIDE] = (0, max(after.machine - before.machine - ours, 0.0))
    return {kind: totals[kind] for kind in KINDS if kind in totals}


async def idle(kind: str, quiet: float = 0.5, limit: float = 60.0) -> bool:
    """Wait until processes of ``kind`` used no CPU for ``quiet`` seconds (True), or
    ``limit`` seconds passed (False)."""
    deadline = time.monotonic() + limit
    last = -1.0
    while time.monotonic() < deadline:
        used = sum(s for k, s in snapshot().processes.values() if k == kind)
        if used == last:
            return True
        last = used
        await asyncio.sleep(quiet)
    return False
