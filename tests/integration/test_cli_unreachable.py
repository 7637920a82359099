"""A command pointed at a mesh that is not there says so at once, not after a service's
patience: a person at a prompt is waiting."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from services.cli_common import CLI_CONNECT_WAIT, connected
from services.runtime.settings import Settings

pytestmark = pytest.mark.integration


def closed_port() -> int:
    with socket.socket() as s:  # bound, then closed: nothing listens there
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_command_when_nats_url_has_no_server_fails_within_its_short_wait(
    tmp_path: Path,
) -> None:
    settings = Settings(home=tmp_path, nats_url=f"nats://127.0.0.1:{closed_port()}")
    started = time.monotonic()
    with pytest.raises(ConnectionError, match=r"cannot reach NATS .* fix NATS_URL"):
        async with connected(settings, ()):
            pass
    assert time.monotonic() - started < CLI_CONNECT_WAIT + 1.5
