"""A pids cgroup per sandboxed step: a bound on its threads that holds for root too.

RLIMIT_NPROC counts per user and is not enforced for root, and the sandbox's uid maps to
the bridge's own outside its user namespace. A pids cgroup counts every thread of the
processes in it, whoever they are. The bridge makes one per step under its own cgroup,
puts the sandbox's first process in it before that process starts anything (bubblewrap
waits on ``--block-fd``), and removes it once the step has ended.

Where no pids controller can be written (a container without one delegated), ``create``
returns None and the step runs with RLIMIT_NPROC alone, which holds where the bridge is
not root; ``docs/python-steps.md`` says so.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
_names = itertools.count(1)


def _own_cgroups(proc_cgroup: str) -> tuple[str | None, str | None]:
    """This process's path in the v1 pids hierarchy and in the v2 one, from
    /proc/self/cgroup lines ``id:controllers:path``."""
    v1 = v2 = None
    for line in proc_cgroup.splitlines():
        _, controllers, path = line.split(":", 2)
        if "pids" in controllers.split(","):
            v1 = path
        elif controllers == "":
            v2 = path
    return v1, v2


def parent_folder(root: Path = CGROUP_ROOT) -> Path | None:
    """The folder a step's cgroup is made in, or None where no pids controller is ours."""
    try:
        v1, v2 = _own_cgroups(Path("/proc/self/cgroup").read_text())
    except OSError:
        return None
    candidates = []
    if v1 is not None:
        candidates.append(root / "pids" / v1.lstrip("/"))
    if v2 is not None:
        for mount in (root, root / "unified"):
            folder = mount / v2.lstrip("/")
            with contextlib.suppress(OSError):
                if "pids" in (folder / "cgroup.subtree_control").read_text().split():
                    candidates.append(folder)
    for folder in candidates:
        if os.access(folder, os.W_OK):
            return folder
    return None


def sweep(parent: Path | None) -> None:
    """Remove the step cgroups a killed bridge left behind (empty: their steps died with it)."""
    if parent is None:
        return
    for folder in parent.glob("blendmesh-step-*-*"):
        owner = folder.name.split("-")[2]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            with contextlib.suppress(OSError):
                folder.rmdir()


class Budget:
    """One step's pids cgroup: at most ``limit`` threads in all its processes."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @classmethod
    def create(cls, limit: int, parent: Path | None) -> Budget | None:
        """A new cgroup holding at most ``limit`` tasks, or None where none can be made."""
        if parent is None:
            return None
        folder = parent / f"blendmesh-step-{os.getpid()}-{next(_names)}"
        try:
            folder.mkdir()
            (folder / "pids.max").write_text(str(limit))
        except OSError:
            with contextlib.suppress(OSError):
                folder.rmdir()
            return None
        return cls(folder)

    def admit(self, pid: int) -> None:
        """Move ``pid`` in; what it starts later is counted here too."""
        (self.folder / "cgroup.procs").write_text(str(pid))

    def close(self) -> None:
        """Remove the cgroup; it must be empty (the step's processes reaped)."""
        with contextlib.suppress(OSError):
            self.folder.rmdir()
