"""``blendmesh up`` whose nats-server dies stops loudly instead of answering 503 forever."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from tests.support.meshes import blendmesh_up


def _children(pid: int) -> list[tuple[int, str]]:
    """(pid, command name) of the processes whose parent is ``pid`` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        if ppid == pid:
            found.append((int(entry.name), name))
    return found


def test_up_when_its_nats_server_is_killed_exits_4_naming_it(tmp_path: Path) -> None:
    with blendmesh_up(tmp_path / "home", "--port", "0") as up:
        (server,) = [pid for pid, name in _children(up.proc.pid) if name == "nats-server"]
        os.kill(server, signal.SIGKILL)
        assert up.proc.wait(timeout=30) == 4
        said = up.stderr_after_exit()
    assert f"nats-server {server} exited" in said
    assert "start it again with `blendmesh up`" in said
