"""An executor that starts throws away the work directory an executor of this host left
when its process died (checkpoints of big scenes and all), and nothing else: not a live
executor's, not its own. What it stops with, it removes itself, trash included."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from services.doors.cli.mesh import Mesh
from services.runtime.service.settings import Settings

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def dead_pid() -> int:
    """The pid of a process that has ended (and was reaped)."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    return int(done.stdout)


async def test_executor_when_it_starts_throws_away_a_dead_executors_work_dir(
    tmp_path: Path,
) -> None:
    settings = Settings(home=tmp_path, prefix="wd", user="ana", previews=False)
    host = socket.gethostname().replace(":", "-")
    dead = settings.work_dir / f"{host}-{dead_pid()}-0a1b2c"
    left = dead / "revisions" / "big-00000007.blend"
    left.parent.mkdir(parents=True)
    left.write_bytes(b"BLENDER" + b"x" * 4096)
    # This test's own process is alive: a directory in its name is a live executor's.
    live = settings.work_dir / f"{host}-{os.getpid()}-3d4e5f"
    live.mkdir(parents=True)
    other_host = settings.work_dir / "elsewhere-1-abcdef"
    other_host.mkdir()
    async with Mesh(settings, services=["executor"]):
        for _ in range(100):
            if not dead.exists() and not list((settings.work_dir / "trash").iterdir()):
                break
            await asyncio.sleep(0.05)
        assert not dead.exists()
        assert list((settings.work_dir / "trash").iterdir()) == []  # deleted, not just moved
        assert live.is_dir() and other_host.is_dir()
    assert live.is_dir() and other_host.is_dir()
    assert sorted(p.name for p in settings.work_dir.iterdir()) == sorted(
        ["trash", live.name, other_host.name]
    )
