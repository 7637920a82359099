"""The step's seccomp filter reaches every thread of its process, those started before
it was added included: Blender starts threads while bpy is imported, before the child
adds the filter, and a thread without it could still start a program. Run in a plain
Python process of its own (no bpy needed), as the sandbox's child adds it."""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = """
import ctypes, errno, os, threading
from services.bridge.sandbox import seccomp
libc = ctypes.CDLL(None, use_errno=True)
assert libc.prctl(38, 1, 0, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS, as bubblewrap sets it
ready, added, seen = threading.Event(), threading.Event(), []
def older():
    ready.set()
    added.wait()
    try:
        os.execv('/bin/true', ['true'])
    except OSError as err:
        seen.append(err.errno)
thread = threading.Thread(target=older)
thread.start()
ready.wait()
seccomp.install(seccomp.step_filter())
added.set()
thread.join()
print(seen == [errno.EPERM], os.getpid() > 0)
"""


@pytest.mark.integration
def test_step_filter_when_added_holds_for_a_thread_started_before_it() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, check=False
    )
    # A thread left without the filter would have become /bin/true: exit 0, nothing said.
    assert done.stdout == "True True\n", (done.returncode, done.stdout, done.stderr[-2000:])
