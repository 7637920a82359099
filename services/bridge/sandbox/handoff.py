"""The scene's way into a sandboxed step and back: unnamed files, passed as descriptors.

Nothing the bridge reads after a step is opened by a name the step could change. The
bridge makes three unnamed files (``O_TMPFILE``, or made and unlinked at once) in a
folder only it can see, before the sandbox starts, and the sandbox inherits their
descriptors: the scene to open, the scene it saved, and its stderr. The bridge reads the
saved scene only once every process of the sandbox is gone (``Warm.kill``), copies it to
a file of its own and opens that. The files vanish when the last descriptor closes,
whatever killed whom.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import BinaryIO

CHUNK = 1024 * 1024


class OutputRefused(ValueError):
    """The step's saved scene cannot be taken: the message says why."""


def unnamed(folder: Path) -> BinaryIO:
    """A read-write file with no name, in ``folder``."""
    return tempfile.TemporaryFile(dir=folder)


def copy(src: int, dst: int, size: int) -> None:
    """``size`` bytes from the start of ``src`` to ``dst``'s position; OSError when short."""
    offset = 0
    while offset < size:
        sent = os.sendfile(dst, src, offset, min(CHUNK, size - offset))
        if sent == 0:
            raise OSError(f"the file ended after {offset} of {size} bytes")
        offset += sent


def fill(file: BinaryIO, path: Path) -> int:
    """Put the bytes of ``path`` into ``file`` from its start; their count."""
    fd = file.fileno()
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    src = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        size = os.fstat(src).st_size
        copy(src, fd, size)
    finally:
        os.close(src)
    return size


def take(file: BinaryIO, dest: Path, limit: int) -> Path:
    """Copy what the (dead) step left in ``file`` to a new file ``dest`` of the bridge's;
    OutputRefused when it is empty or larger than ``limit`` bytes."""
    fd = file.fileno()
    size = os.fstat(fd).st_size
    if size == 0:
        raise OutputRefused("is empty: the step said it saved a scene but handed back none")
    if size > limit:
        raise OutputRefused(f"is {size} bytes, over the {limit} a step may hand back")
    out = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        copy(fd, out, size)
    except OSError as err:
        raise OutputRefused(f"could not be read: {err}") from None
    finally:
        os.close(out)
    return dest


def tail(file: BinaryIO, count: int) -> bytes:
    """The last ``count`` bytes written to ``file``."""
    fd = file.fileno()
    size = os.fstat(fd).st_size
    return os.pread(fd, count, max(0, size - count))
