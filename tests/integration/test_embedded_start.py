"""Starting the embedded nats-server: one that cannot listen says why, and one that does not
come up within its wait is stopped, not left running (a real nats-server)."""

from __future__ import annotations

import socket
import sys
import time
from pathlib import Path

import pytest

from services.runtime.server import embedded
from services.runtime.server.embedded import EmbeddedNats, EmbeddedServerError

pytestmark = pytest.mark.integration


async def test_start_when_the_port_is_taken_says_the_server_exited_with_its_log(
    tmp_path: Path,
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        server = EmbeddedNats(tmp_path / "store", port=taken.getsockname()[1])
        try:
            with pytest.raises(EmbeddedServerError, match="nats-server exited at start") as raised:
                await server.start(timeout=30)
        finally:
            await server.stop()
    assert "address already in use" in str(raised.value).lower()


def running(program: Path) -> bool:
    """Whether any process runs ``program`` (its path is in the command line)."""
    for proc in Path("/proc").iterdir():
        try:
            if str(program).encode() in (proc / "cmdline").read_bytes():
                return True
        except OSError:  # not a process, or one that just ended
            continue
    return False


async def test_start_when_not_listening_within_its_wait_stops_the_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = embedded.server_binary()
    slow = tmp_path / "slow-nats-server"
    # The real server, started only after a long pause: a machine too busy to start it.
    slow.write_text(
        f"#!{sys.executable}\n"
        "import os, sys, time\n"
        "time.sleep(60)\n"
        f"os.execv({real!r}, [{real!r}, *sys.argv[1:]])\n"
    )
    slow.chmod(0o755)
    monkeypatch.setattr(embedded, "server_binary", lambda: str(slow))
    server = EmbeddedNats(tmp_path / "store")
    began = time.monotonic()
    with pytest.raises(EmbeddedServerError, match=r"nats-server did not start within 0\.5 s"):
        await server.start(timeout=0.5)
    assert 0.5 <= time.monotonic() - began < 15
    assert server.pid is None
    assert not running(slow)  # stopped, not left running
