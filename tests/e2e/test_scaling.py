"""Several executors on one mesh: `blendmesh up --executors N` and the Procfile's
`honcho start -c executor=N` both bind N executors to the same durable consumer."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from contracts import subjects
from services.runtime.nats.access import ADMIN, login_for
from services.runtime.service.host import Bus
from tests.support.meshes import BLENDMESH, blendmesh_up, command_env

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


async def waiting_executors(url: str, prefix: str, count: int, credentials: Path) -> int:
    for _ in range(600):  # the nats process writes its users' file before it listens
        if await asyncio.to_thread(credentials.exists):
            break
        await asyncio.sleep(0.1)
    # As admin: only admin may inspect the executors' consumer (ADR 0015).
    bus = await Bus.open(url, prefix, "probe", login_for(credentials, ADMIN))
    try:
        seen = 0
        for _ in range(600):
            try:
                info = await bus.js.consumer_info(subjects.stream_name(prefix), "executor")
                seen = info.num_waiting
            except Exception:  # noqa: BLE001 - not created yet
                seen = 0
            if seen >= count:
                break
            await asyncio.sleep(0.1)
        return seen
    finally:
        await bus.close()


def run_json(url: str, credentials: Path, home: Path, prompt: str, scene: str) -> dict[str, object]:
    env = command_env({"NATS_URL": url, "BLENDMESH_NATS_CREDENTIALS": str(credentials)})
    proc = subprocess.run(
        [BLENDMESH, "--home", str(home), "run", "--json", "--scene", scene, prompt],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


async def test_up_when_executors_2_binds_two_executors(tmp_path: Path) -> None:
    # One bridge each, so two pulls on the durable are two executors.
    with blendmesh_up(tmp_path / "mesh", "--executors", "2", env={"BLENDMESH_BRIDGES": "1"}) as up:
        assert "2 executors" in up.banner, up.banner
        url = up.nats_url
        credentials = tmp_path / "mesh" / "nats-credentials.json"
        assert await waiting_executors(url, "blendmesh", 2, credentials) >= 2
        results = [
            run_json(url, credentials, tmp_path / "c", f"add a cube named C{i}", f"s{i}")
            for i in range(2)
        ]
        assert all(r["status"] == "completed" for r in results)


def openapi_title(port: int) -> str:
    """The gateway's OpenAPI title, once the Procfile's gateway line serves it."""
    for _ in range(300):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/openapi.json", timeout=5) as r:
                return str(json.load(r)["info"]["title"])
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"no gateway on port {port}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_procfile_when_scaled_to_two_executors_serves_runs(tmp_path: Path) -> None:
    """Started the way README says: `.venv/bin/honcho start` beside the checkout's venv,
    with nothing of the venv on PATH (the Procfile must find its interpreter itself)."""
    assert (BIN / "honcho").exists(), "honcho is a dev dependency"
    shutil.copy(ROOT / "Procfile", tmp_path / "Procfile")
    (tmp_path / ".venv").symlink_to(BIN.parent, target_is_directory=True)
    port, http_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("NATS_URL", "PYTHON", "PYTHONPATH")}
    env.update(
        {
            "PATH": os.pathsep.join(
                p for p in env.get("PATH", "").split(os.pathsep) if Path(p) != BIN
            ),
            "NATS_PORT": str(port),
            "GATEWAY_PORT": str(http_port),
        }
    )
    procs = subprocess.Popen(
        [".venv/bin/honcho", "start", "-c", "executor=2"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"nats://127.0.0.1:{port}"
    try:
        credentials = tmp_path / "var" / "nats-credentials.json"
        assert await waiting_executors(url, "blendmesh", 2, credentials) >= 2
        result = run_json(url, credentials, tmp_path / "client", "add a cone named Tip", "procfile")
        assert result["status"] == "completed"
        assert str(result["blend_path"]).startswith(str(tmp_path / "var"))
        assert await asyncio.to_thread(openapi_title, http_port) == "blendmesh"
    finally:
        os.killpg(procs.pid, signal.SIGINT)
        try:
            procs.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(procs.pid, signal.SIGKILL)
            procs.wait()
