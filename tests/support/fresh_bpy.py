"""Read a saved .blend as a user would: in a fresh Blender (bpy) process of its own.

The test process never imports bpy, and the process is awaited rather than run blocking:
a mesh shares the test's event loop, and a loop stalled for the seconds bpy takes to start
would starve its services' acks and heartbeats.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

MARK = "RESULT "  # the line a script writes its JSON answer on
TIMEOUT = 120.0  # seconds for bpy to start, open the file and answer on a busy machine


async def read_with_bpy(script: str, path: str) -> Any:
    """What ``script`` writes after ``MARK`` on stdout, as JSON; it finds ``path`` in
    ``sys.argv[1]`` and writes to ``sys.__stdout__`` (bpy takes over ``sys.stdout``)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        script,
        path,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout=TIMEOUT)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    assert proc.returncode == 0, err.decode(errors="replace")
    line = next(x for x in out.decode().splitlines() if x.startswith(MARK))
    return json.loads(line.removeprefix(MARK))
