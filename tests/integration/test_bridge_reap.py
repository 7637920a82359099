"""A bridge child that closes its output but does not exit (a Blender stuck shutting down)
is killed after a bounded wait: a crash report or a close never waits on it for ever."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from services.executor.adapters.bridge_client import CLOSE_TIMEOUT, BridgeCrashed, BridgeProcess

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


async def test_start_when_the_child_closes_stdout_but_lives_kills_it_and_reports(
    tmp_path: Path,
) -> None:
    stuck = tmp_path / "stuck-python"
    # Whatever it is asked to run, it closes its output and sleeps on.
    stuck.write_text("#!/bin/sh\nexec 1>&-\nexec sleep 600\n")
    stuck.chmod(0o755)
    bridge = BridgeProcess(python=str(stuck))
    began = time.monotonic()
    with pytest.raises(BridgeCrashed, match="bridge closed its stdout"):
        await bridge.start()
    took = time.monotonic() - began
    assert took < 2 * CLOSE_TIMEOUT + 5, took
    pid = bridge.pid
    assert pid is not None
    await asyncio.sleep(0)
    with pytest.raises(ProcessLookupError):  # killed and reaped, not left sleeping
        os.kill(pid, 0)
    await bridge.close()  # and closing it again returns at once
