"""Files the executor no longer needs, deleted by a thread of their own at the lowest
CPU priority, off the run's path and off the event loop.

Deleting a big scene's .blend is slow: the kernel frees every page and extent of it while
the call waits, 50-90 ms for bench/big_scene.py's 77 MiB file on ext4. A commit did that
twice, on its path: once for the checkpoint it replaced (on the event loop every service
of the process shares) and once inside the ``os.replace`` that puts a new exported copy
over the old. Here a discarded file is renamed into the trash folder at once, which frees
nothing, and unlinked later; ``keep`` holds a second link to a file about to be replaced,
so the replace frees nothing either.

What a stopped executor left in its trash is deleted when the next one starts. A file
that cannot be moved there (another file system) is deleted at once, as before.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import queue
import secrets
import threading
from pathlib import Path

log = logging.getLogger("blendmesh.executor")

# Files waiting to be deleted. Each commit adds two at most and the thread deletes one in
# a tenth of a second at worst, so this is reached only if the disk stalls; a file beyond
# it is deleted by whoever discards it, which is slower but loses nothing.
MAX_WAITING = 256
NICE = 19  # the lowest priority: whatever else wants the CPU goes first


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
        """Take ``path`` away now and delete it later; a missing file is no error."""
        target = self.root / f"{next(self._names)}-{path.name}"
        try:
            os.rename(path, target)
        except FileNotFoundError:
            return
        except OSError:  # e.g. another file system: a rename would copy it
            path.unlink(missing_ok=True)
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
            target.unlink(missing_ok=True)
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
                path.unlink(missing_ok=True)
            except OSError as exc:
                log.warning("could not delete %s: %s", path, exc)
            finally:
                self._waiting.task_done()
