"""Peak resident memory of this process and of the Blender bridges it runs, per phase.

An embedded mesh runs every service (the executor among them) in this process, and each
Blender as a child process (``python -m services.bridge``). Linux keeps each process's
high-water mark (``VmHWM`` in ``/proc/<pid>/status``), and writing ``5`` to
``/proc/<pid>/clear_refs`` lowers it to the current resident size: so each phase starts
from what is resident now, and its peak is read when it ends. A bridge may come and go in
a phase (started on demand, restarted), so the bridges are also sampled while it runs.
"""

from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

PROC = Path("/proc")
SAMPLE_EVERY = 0.2  # seconds between looks at the bridges' resident size


def status_kib(pid: int, key: str) -> int | None:
    """A ``/proc/<pid>/status`` size in KiB (``VmHWM``, ``VmRSS``); None when it is gone."""
    try:
        for line in (PROC / str(pid) / "status").read_text().splitlines():
            if line.startswith(f"{key}:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def bridge_pids(parent: int) -> list[int]:
    """The Blender bridges process ``parent`` runs now."""
    found = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        state, ppid = stat[stat.rindex(")") + 2 :].split()[:2]
        if int(ppid) == parent and state != "Z" and b"services.bridge" in command:
            found.append(int(entry.name))
    return found


def _reset(pid: int) -> None:
    with contextlib.suppress(OSError):  # gone already: it has no peak in this phase
        (PROC / str(pid) / "clear_refs").write_text("5")


@dataclass
class Peaks:
    """``with Peaks() as peaks:`` around a phase; then ``own_kib`` is this process's peak
    and ``bridges_kib`` each bridge's (by pid) during it."""

    own_kib: int = 0
    bridges_kib: dict[int, int] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> Peaks:
        me = os.getpid()
        for pid in (me, *bridge_pids(me)):
            _reset(pid)
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._look("VmHWM")
        self.own_kib = status_kib(os.getpid(), "VmHWM") or 0

    def _sample(self) -> None:
        while not self._stop.wait(SAMPLE_EVERY):
            self._look("VmRSS")

    def _look(self, key: str) -> None:
        for pid in bridge_pids(os.getpid()):
            kib = status_kib(pid, key)
            if kib is not None:
                self.bridges_kib[pid] = max(self.bridges_kib.get(pid, 0), kib)

    def bridges_text(self) -> str:
        if not self.bridges_kib:
            return "no bridge"
        return ", ".join(f"{kib / 1024:.0f} MiB" for _, kib in sorted(self.bridges_kib.items()))
