"""Files the executor no longer needs, deleted by a thread of their own at the lowest
CPU priority, off the run's path and off the event loop.

Deleting a big scene's .blend is slow: the kernel frees every page and extent of it while
the call waits, 50-90 ms for bench/big_scene.py's 77 MiB file on ext4. A commit did that
twice, on its path: once for the checkpoint it replaced (on the event loop every service
of the process shares) and once inside the ``os.replace`` that puts a new exported copy
over the old. Here a discarded file is renamed into the trash folder at once, which frees
nothing, and unlinked later; ``keep`` holds a second link to a file about to be replaced,
so the replace frees nothing either.

The trash is one folder for every executor of a blendmesh home (``<work>/trash``), so what
one that died left there is deleted when the next one starts, as is the work directory of
an executor of this host whose process is gone (``stale_work_dirs``): each executor works in
a directory of its own, named for its host, process and a random tag, which it removes
when it stops and which a crash left behind for good, checkpoints of big scenes and all.
A file that cannot be moved to the trash (another file system) is deleted at once.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import queue
import re
import secrets
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger("blendmesh.executor")

# Files waiting to be deleted. Each commit adds two at most and the thread deletes one in
# a tenth of a second at worst, so this is reached only if the disk stalls; a file beyond
# it is deleted by whoever discards it, which is slower but loses nothing.
MAX_WAITING = 256
NICE = 19  # the lowest priority: whatever else wants the CPU goes first
# An executor's work directory: ``<host>-<pid>-<6 hex>`` (executor/app.py names it).
WORK_DIR = re.compile(r"(?P<host>.+)-(?P<pid>[0-9]+)-[0-9a-f]{6}")


class Trash:
    """The trash folder ``root`` and the thread that empties it."""

    def __init__(self, root: Path, max_waiting: int = MAX_WAITING) -> None:
        self.root = root
        self.max_waiting = max_waiting
        root.mkdir(parents=True, exist_ok=True)
        # A prefix of its own: never the name of something a stopped executor left.
        self._names = (f"{secrets.token_hex(4)}-{n}" for n in itertools.count())
        self._waiting: queue.Queue[Path | None] = queue.Queue()
        self._thread = threading.Thread(target=self._empty, name="blendmesh-trash", daemon=True)
        self._thread.start()
        for left in sorted(root.iterdir()):
            self._put(left)

    def discard(self, path: Path) -> None:
        """Take ``path`` (a file, or a directory and all in it) away now and delete it
        later; a missing one is no error."""
        target = self.root / f"{next(self._names)}-{path.name}"
        try:
            os.rename(path, target)
        except FileNotFoundError:
            return
        except OSError:  # e.g. another file system: a rename would copy it
            _delete(path)
            return
        self._put(target)

    def keep(self, path: Path) -> None:
        """Hold a second link to ``path``, so that replacing or deleting it frees nothing
        until the trash deletes the link."""
        target = self.root / f"{next(self._names)}-{path.name}"
        try:
            os.link(path, target)
        except OSError:  # gone, or another file system: the replace frees it, as before
            return
        self._put(target)

    def drain(self) -> None:
        """Wait until everything discarded so far is deleted (blocking)."""
        self._waiting.join()

    def close(self, timeout: float = 5.0) -> None:
        """Stop the thread once it has deleted what is waiting (blocking, ``timeout`` s
        at most; what it leaves goes when the next executor starts)."""
        self._waiting.put(None)
        self._thread.join(timeout)

    def _put(self, target: Path) -> None:
        if self._waiting.qsize() >= self.max_waiting:
            _delete(target)
            return
        self._waiting.put(target)

    def _empty(self) -> None:
        # Per thread on Linux: the kernel's freeing, done in this thread's unlink, then
        # yields to the runs as the rest of this thread does.
        with contextlib.suppress(OSError, AttributeError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICE)
        while True:
            path = self._waiting.get()
            try:
                if path is None:
                    return
                _delete(path)
            except FileNotFoundError:
                pass  # another executor's trash thread, sweeping at its start, was first
            except OSError as exc:
                log.warning("could not delete %s: %s", path, exc)
            finally:
                self._waiting.task_done()


def _delete(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def stale_work_dirs(
    root: Path, host: str, alive: Callable[[int], bool] | None = None
) -> list[Path]:
    """The work directories under ``root`` of this host's executors whose process is gone.
    Another host's are left alone (a home may be shared): only that host can tell."""
    alive = alive or _alive
    found = []
    for path in sorted(root.iterdir()) if root.is_dir() else []:
        named = WORK_DIR.fullmatch(path.name)
        if named is None or named["host"] != host.replace(":", "-") or not path.is_dir():
            continue
        if not alive(int(named["pid"])):
            found.append(path)
    return found


def _alive(pid: int) -> bool:
    """Whether a process ``pid`` runs. A pid reused by another process counts as alive,
    which only keeps a directory that could have gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True
