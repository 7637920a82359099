"""``blendmesh up`` serves the HTTP gateway beside the mesh, as a user starts it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx

from tests.support.meshes import BLENDMESH, blendmesh_up, command_env


def test_up_when_port_zero_serves_gateway_with_tokens(tmp_path: Path) -> None:
    env = {"BLENDMESH_API_TOKENS": "tok-ana=ana"}
    with blendmesh_up(tmp_path, "--port", "0", env=env) as up:
        assert up.gateway_url.startswith("http://127.0.0.1:"), up.banner
        with httpx.Client(base_url=up.gateway_url, timeout=30) as client:
            mine = client.get("/api/runs", headers={"Authorization": "Bearer tok-ana"})
            anonymous = client.get("/api/runs")
            documented = client.get("/openapi.json")
        assert mine.status_code == 200 and mine.json() == {"runs": []}
        assert anonymous.status_code == 401
        assert "/api/agent/run" in documented.json()["paths"]
    assert up.proc.returncode in (0, 130)
    assert not (tmp_path / "mesh.json").exists()


def test_up_when_running_status_says_ready_with_the_gateway_and_readyz_agrees(
    tmp_path: Path,
) -> None:
    with blendmesh_up(tmp_path, "--port", "0") as up:
        shown = subprocess.run(
            [BLENDMESH, "--home", str(tmp_path), "status", "--json", "--wait", "3"],
            capture_output=True,
            text=True,
            env=command_env(),
            timeout=60,
        )
        with httpx.Client(base_url=up.gateway_url, timeout=30) as client:
            ready = client.get("/readyz")
            live = client.get("/healthz")
    assert shown.returncode == 0, shown.stderr
    status = json.loads(shown.stdout)
    roles = {s["role"]: len(s["instances"]) for s in status["services"]}
    assert roles == {r: 1 for r in roles}  # every role, the gateway and the door included
    assert ready.status_code == 200 and ready.json()["ready"] is True
    assert live.status_code == 200 and live.json()["live"] is True
    after = subprocess.run(
        [BLENDMESH, "--home", str(tmp_path), "status"],
        capture_output=True,
        text=True,
        env=command_env(),
        timeout=60,
    )
    assert after.returncode == 3 and after.stdout.startswith("mesh: NOT READY\n")
    assert "no mesh runs on" in after.stdout
