"""``blendmesh up`` with a service that dies, or cannot start, exits 4 naming it, instead
of living on with a dead service inside: a supervisor can then start it again."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from services.executor.adapters.supervisor import RESTART_LIMIT
from tests.support.bridges import bridge_pids
from tests.support.meshes import BLENDMESH, blendmesh_up, command_env

pytestmark = pytest.mark.timeout(240)


def kill_bridges_until_exit(proc: subprocess.Popen[str], within: float = 120) -> set[int]:
    """SIGKILL every Blender bridge ``proc`` starts, as a Blender that keeps crashing,
    until ``proc`` ends; the pids killed."""
    killed: set[int] = set()
    deadline = time.monotonic() + within
    while proc.poll() is None and time.monotonic() < deadline:
        for pid in set(bridge_pids(proc.pid)) - killed:
            os.kill(pid, signal.SIGKILL)
            killed.add(pid)
        time.sleep(0.02)
    return killed


def test_up_when_its_blender_keeps_dying_exits_4_naming_the_executor(tmp_path: Path) -> None:
    with blendmesh_up(tmp_path / "home", "--port", "0", env={"BLENDMESH_PREVIEWS": "0"}) as up:
        killed = kill_bridges_until_exit(up.proc)
        assert up.proc.wait(timeout=30) == 4
        said = up.stderr_after_exit()
    assert len(killed) == RESTART_LIMIT + 1  # the first Blender and each restart
    assert "blendmesh up: executor died: the Blender bridge kept dying" in said
    assert "start it again with `blendmesh up`" in said


def test_up_when_a_service_cannot_start_exits_4_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "no-policies"
    proc = subprocess.run(
        [BLENDMESH, "--home", str(tmp_path / "home"), "up", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=120,
        env=command_env({"BLENDMESH_POLICY_DIR": str(missing)}),
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 4, proc.stderr
    assert f"blendmesh: policy could not start: policy folder {missing} does not exist" in (
        proc.stderr
    )
    assert "Traceback" not in proc.stderr
