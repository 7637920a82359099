"""How a bridge child ends. Asked to stop, it leaves at once, with what it saved written and
no temporary folder behind; one that closes its output but does not exit (a Blender stuck
shutting down) is killed after a bounded wait: a crash report or a close never waits on
it for ever."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from services.executor.adapters.bridge_client import (
    CLOSE_TIMEOUT,
    BridgeCrashed,
    BridgeProcess,
    finish,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


async def test_close_when_asked_exits_0_with_its_save_written_and_no_temp_folder_left(
    tmp_path: Path,
) -> None:
    # The bridge skips Blender's own exit (services/bridge/__main__.py): what that exit
    # did that outlives the process must still be done, and nothing saved may be cut.
    temp = tmp_path / "tmp"
    temp.mkdir()
    bridge = BridgeProcess(env={**os.environ, "TMPDIR": str(temp)})
    await bridge.start()
    try:
        made = await bridge.call_tool(
            "object.create", {"primitive": "cube", "name": "Kept"}, mcp_call_id="kept"
        )
        assert made.ok, made.message
        assert [p.name for p in temp.iterdir()] != []  # Blender's session folder, in use
        saved = await bridge.save(str(tmp_path / "kept.blend"))
    finally:
        await bridge.close()
    assert await bridge.exited() == 0
    assert list(temp.iterdir()) == []
    written = (tmp_path / "kept.blend").read_bytes()
    assert len(written) == saved.bytes and written.startswith(b"BLENDER")


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


async def test_finish_when_its_caller_is_cancelled_lets_the_cancellation_through() -> None:
    # A close cancelled while it waits for the stderr drain must end: swallowing the
    # cancellation left a supervisor's idle loop running and its close waiting for ever.
    draining = asyncio.create_task(asyncio.sleep(30), name="stderr drain")
    closing = asyncio.create_task(finish(draining, 10.0))
    await asyncio.sleep(0.05)
    closing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(closing, 2.0)
    assert not draining.done()  # the caller's cancellation, not the drain's
    draining.cancel()


async def test_finish_when_the_task_outlives_its_time_cancels_it_and_returns() -> None:
    draining = asyncio.create_task(asyncio.sleep(30))
    began = time.monotonic()
    await finish(draining, 0.1)
    await asyncio.sleep(0)
    assert draining.cancelled() and time.monotonic() - began < 2


async def test_finish_when_the_task_failed_or_was_cancelled_returns_quietly() -> None:
    async def fails() -> None:
        raise OSError("pipe gone")

    failed = asyncio.create_task(fails())
    cancelled = asyncio.create_task(asyncio.sleep(30))
    cancelled.cancel()
    await finish(failed, 1.0)
    await finish(cancelled, 1.0)
    assert isinstance(failed.exception(), OSError) and cancelled.cancelled()
