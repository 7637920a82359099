"""A run that waits for a service nobody runs says so, and goes on once one starts.

Started as the README says, with the Procfile's processes (`honcho start`), but without
any executor: `blendmesh run` must say within 10 s that no executor is running and how to
start one, keep following the run, and complete once an executor is started."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from services.runtime.nats.access import CLIENT, login_for
from services.runtime.service import health
from services.runtime.service.host import Bus
from tests.e2e.test_scaling import BIN, ROOT, free_port
from tests.support.meshes import BLENDMESH, command_env

PLAN = {
    "request_id": "waits-1",
    "operations": [
        {
            "operation_id": "a",
            "tool_name": "object.create",
            "args": {"primitive": "cube", "name": "Late"},
            "depends_on": [],
            "safety_level": "safe_write",
        }
    ],
}
NEEDED = ("planner", "policy", "guardians", "audit")


def procfile_env(port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NATS_URL", "PYTHON", "PYTHONPATH")}
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if Path(p) != BIN
    )
    env["NATS_PORT"] = str(port)
    return env


async def services_up(url: str, credentials: Path, roles: tuple[str, ...]) -> None:
    for _ in range(600):  # the nats process writes its users' file before it listens
        if await asyncio.to_thread(credentials.exists):
            break
        await asyncio.sleep(0.1)
    bus = await Bus.open(url, "blendmesh", "probe", login_for(credentials, CLIENT))
    try:
        for _ in range(600):
            found = [r for r in roles if await health.ping(bus.nc, r, 0.2, "blendmesh")]
            if len(found) == len(roles):
                return
        raise AssertionError(f"only {found} of {roles} answered")
    finally:
        await bus.close()


def stop(proc: subprocess.Popen[bytes]) -> None:
    os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


async def test_run_when_no_executor_runs_says_so_within_10_s_then_completes_once_one_starts(
    tmp_path: Path,
) -> None:
    shutil.copy(ROOT / "Procfile", tmp_path / "Procfile")
    (tmp_path / ".venv").symlink_to(BIN.parent, target_is_directory=True)
    port = free_port()
    env = procfile_env(port)
    mesh = subprocess.Popen(
        [".venv/bin/honcho", "start", "-c", "executor=0,gateway=0"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"nats://127.0.0.1:{port}"
    credentials = tmp_path / "var" / "nats-credentials.json"
    executor: subprocess.Popen[bytes] | None = None
    try:
        await services_up(url, credentials, NEEDED)
        (tmp_path / "plan.json").write_text(json.dumps(PLAN))
        run = subprocess.Popen(
            [BLENDMESH, "--home", str(tmp_path / "client"), "run", "--json", "--scene", "late",
             "--plan", str(tmp_path / "plan.json"), "--timeout", "120"],
            env=command_env({"NATS_URL": url, "BLENDMESH_NATS_CREDENTIALS": str(credentials)}),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        started = time.monotonic()
        assert run.stderr is not None
        said = ""
        while "no executor is running" not in said:
            line = await asyncio.wait_for(asyncio.to_thread(run.stderr.readline), 15)
            assert line, f"blendmesh run ended without saying so: {said}"
            said += line.decode()
        assert time.monotonic() - started < 10.0, said
        assert "python -m services.executor" in said and "goes on once one starts" in said
        executor = subprocess.Popen(
            [sys.executable, "-m", "services.executor"],
            cwd=tmp_path,
            env={**env, "NATS_URL": url},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        out, rest = await asyncio.to_thread(run.communicate, timeout=180)
        assert run.returncode == 0, said + rest.decode()
        assert json.loads(out)["status"] == "completed"
    finally:
        if executor is not None:
            stop(executor)
        stop(mesh)
