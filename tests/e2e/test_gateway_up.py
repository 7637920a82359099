"""``blendmesh up`` serves the HTTP gateway beside the mesh, as a user starts it."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.meshes import blendmesh_up


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
