"""Services run as processes of their own, as the Procfile runs them, each serve ``/metrics``
on ``BLENDMESH_METRICS_PORT``; one whose port is taken exits naming the setting."""

from __future__ import annotations

import asyncio
import signal
import socket
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.chaos.test_procfile_lines_exit import consuming, ended, service
from tests.chaos.test_procfile_lines_exit import served as served  # the fixture

pytestmark = pytest.mark.timeout(180)

ROOT = Path(__file__).resolve().parents[2]


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
        await consuming(url, home, "policy")
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
