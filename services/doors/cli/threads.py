"""The conversation thread each scene's ``blendmesh run`` continues by default.

Each run used to start a thread of its own, so "it", "the copy" and "again" never reached
back to the previous command. The CLI now remembers one thread per user and scene in
``threads.json`` in the mesh's home, made at random on first use (a thread belongs to
the user who first ran in it, so an id others could work out could be taken first);
``--thread`` picks another, ``--new-thread`` starts this scene over.

The file is small and bounded (``MAX_ENTRIES``, the oldest dropped), written whole and
renamed into place; a damaged one is read as empty, which only starts new threads, and a
disk that cannot take it (full, read-only) never fails the run: it runs in a new thread.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from pathlib import Path

from services.doors.core.requests import new_id

FILE_NAME = "threads.json"
LOCK_NAME = "threads.lock"
MAX_ENTRIES = 10_000


def scene_thread(home: Path, user: str, scene: str, *, new: bool = False) -> str:
    """The thread ``user``'s runs on ``scene`` continue; a fresh one when ``new`` or none
    was kept."""
    try:
        return _kept(home, user, scene, new)
    except OSError:  # a full or read-only disk: the run goes on, in a thread of its own
        return new_id("thread")


def _kept(home: Path, user: str, scene: str, new: bool) -> str:
    path = home / FILE_NAME
    home.mkdir(parents=True, exist_ok=True)
    # Commands run side by side in one home: each reads, adds and writes under the lock,
    # so none loses another's thread.
    with open(home / LOCK_NAME, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        known = _read(path)
        key = f"{user}/{scene}"
        thread = known.get(key)
        if thread is not None and not new:
            return thread
        known.pop(key, None)
        known[key] = thread = new_id("thread")  # newest last: trimming keeps it
        _write(path, dict(list(known.items())[-MAX_ENTRIES:]))
    return thread


def _read(path: Path) -> dict[str, str]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict):
        return {}
    return {str(k): v for k, v in list(raw.items())[-MAX_ENTRIES:] if isinstance(v, str)}


def _write(path: Path, known: dict[str, str]) -> None:
    fd, partial = tempfile.mkstemp(dir=path.parent, prefix=".threads-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(known, out)
        os.replace(partial, path)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise
