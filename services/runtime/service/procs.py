"""Child processes that die with their parent, so a killed blendmesh leaves nothing behind."""

from __future__ import annotations

import ctypes
import signal
import sys
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` asking Linux to kill the child when its parent dies."""
    if not sys.platform.startswith("linux"):
        return None

    def _set() -> None:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)

    return _set
