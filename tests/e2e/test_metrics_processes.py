"""Services run as processes of their own, as the Procfile runs them, each serve ``/metrics``
on ``BLENDMESH_METRICS_PORT``; one whose port is taken exits naming the setting."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.chaos.test_procfile_lines_exit import consuming, ended, service
from tests.chaos.test_procfile_lines_exit import served as served  # the fixture
from tests.e2e.test_scaling import run_json, waiting_executors

pytestmark = pytest.mark.timeout(180)

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return answer.status, answer.read().decode()


async def test_policy_process_when_metrics_port_set_serves_its_series(
    served: tuple[str, Path],
) -> None:
    url, home = served
    port = free_port()
    env = {"NATS_URL": url, "BLENDMESH_HOME": str(home), "BLENDMESH_METRICS_PORT": str(port)}
    proc = service("policy", env)
    try:
        for durable in ("policy", "policy-expiry"):  # both started: the service is up
            await consuming(url, home, durable)
        status, text = await asyncio.to_thread(get, f"http://127.0.0.1:{port}/metrics")
    finally:
        proc.send_signal(signal.SIGTERM)
        code, said = await ended(proc)
    assert status == 200
    samples = {
        (s.name, tuple(sorted(s.labels.items())))
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    for consumer in ("policy", "policy-expiry"):
        assert ("blendmesh_consumer_redeliveries_total", (("consumer", consumer),)) in samples
    assert all(name.startswith("blendmesh_") for name, _ in samples)
    assert code == 0, said
    with pytest.raises(OSError):  # it stopped serving with the service
        await asyncio.to_thread(get, f"http://127.0.0.1:{port}/metrics")


async def test_service_process_when_metrics_port_is_taken_exits_naming_it(
    served: tuple[str, Path],
) -> None:
    url, home = served
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {"NATS_URL": url, "BLENDMESH_HOME": str(home), "BLENDMESH_METRICS_PORT": str(port)}
        code, said = await ended(service("planner", env))
    assert code != 0
    assert "BLENDMESH_METRICS_PORT" in said.splitlines()[-1]


def test_procfile_when_metrics_asked_gives_each_service_process_its_own_port() -> None:
    """``METRICS=1 honcho start`` gives every process a PORT of its own (5000, 5100, ...):
    each service line serves its metrics there, the gateway on its own port."""
    lines = dict(
        line.split(": ", 1) for line in (ROOT / "Procfile").read_text().splitlines() if line
    )
    services = [name for name in lines if name not in ("nats", "gateway")]
    assert services
    for name in services:
        assert "BLENDMESH_METRICS_PORT=${METRICS:+$PORT}" in lines[name], name


def free_base() -> int:
    """A base port for honcho whose every process port (base + 100 * line) is free."""
    for base in range(20000, 60000, 997):
        ports = [base + 100 * line for line in range(8)]
        if all(_free(port) for port in ports):
            return base
    raise AssertionError("no free run of ports for honcho")


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def series(port: int) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    _, text = get(f"http://127.0.0.1:{port}/metrics")
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


async def test_procfile_when_started_with_metrics_each_process_counts_its_part(
    tmp_path: Path,
) -> None:
    """``METRICS=1 honcho start``, as docs/operations.md says: a run moves the executor
    process's operations and the audit process's runs, each on its own port."""
    shutil.copy(ROOT / "Procfile", tmp_path / "Procfile")
    (tmp_path / ".venv").symlink_to(BIN.parent, target_is_directory=True)
    nats_port, http_port, base = free_port(), free_port(), free_base()
    audit, executor = base + 100, base + 400  # the Procfile's second and fifth lines
    env = {k: v for k, v in os.environ.items() if k not in ("NATS_URL", "PYTHON", "PYTHONPATH")}
    env.update(
        {
            "PATH": os.pathsep.join(
                p for p in env.get("PATH", "").split(os.pathsep) if Path(p) != BIN
            ),
            "NATS_PORT": str(nats_port),
            "GATEWAY_PORT": str(http_port),
            "METRICS": "1",
            "BLENDMESH_PREVIEWS": "0",
        }
    )
    procs = subprocess.Popen(
        [".venv/bin/honcho", "start", "-p", str(base)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"nats://127.0.0.1:{nats_port}"
    try:
        credentials = tmp_path / "var" / "nats-credentials.json"
        assert await waiting_executors(url, "blendmesh", 1, credentials) >= 1
        before = await asyncio.to_thread(series, executor)
        result = await asyncio.to_thread(
            run_json, url, credentials, tmp_path / "client", "add a cone named Tip", "procfile"
        )
        assert result["status"] == "completed"
        ran = ("blendmesh_operations_total", frozenset({("tool", "object.create"),
                                                       ("status", "succeeded")}))  # fmt: skip
        after = await asyncio.to_thread(series, executor)
        assert after.get(ran, 0) > before.get(ran, 0)
        completed = ("blendmesh_runs_total", frozenset({("outcome", "completed"),
                                                        ("error_code", "none")}))  # fmt: skip
        deadline = time.monotonic() + 30
        while (await asyncio.to_thread(series, audit)).get(completed, 0) < 1:
            assert time.monotonic() < deadline, "the audit process counted no completed run"
            await asyncio.sleep(0.2)
        assert ran not in await asyncio.to_thread(series, audit)  # each process its own part
    finally:
        os.killpg(procs.pid, signal.SIGINT)
        try:
            procs.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(procs.pid, signal.SIGKILL)
            procs.wait()
