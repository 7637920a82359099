"""``blendmesh up`` serves the HTTP gateway beside the mesh, as a user starts it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.integration

BLENDMESH = str(Path(sys.executable).parent / "blendmesh")


def test_up_when_port_zero_serves_gateway_with_tokens(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("NATS_URL", "BLENDMESH_API_TOKENS")}
    env["BLENDMESH_API_TOKENS"] = "tok-ana=ana"
    up = subprocess.Popen(
        [BLENDMESH, "--home", str(tmp_path), "up", "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    try:
        assert up.stderr is not None
        line = up.stderr.readline()
        assert "NATS_URL=" in line and "gateway http://127.0.0.1:" in line, line
        url = line.split("gateway ")[1].split()[0]
        with httpx.Client(base_url=url, timeout=30) as client:
            mine = client.get("/api/runs", headers={"Authorization": "Bearer tok-ana"})
            anonymous = client.get("/api/runs")
            documented = client.get("/openapi.json")
        assert mine.status_code == 200 and mine.json() == {"runs": []}
        assert anonymous.status_code == 401
        assert "/api/agent/run" in documented.json()["paths"]
    finally:
        up.send_signal(signal.SIGINT)
        code = up.wait(timeout=60)
        if up.stderr is not None:
            up.stderr.close()
    assert code in (0, 130)
    assert not (tmp_path / "mesh.json").exists()
