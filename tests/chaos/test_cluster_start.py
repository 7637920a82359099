"""The mesh started on a JetStream cluster that is itself only starting comes up whole.

Three plain nats-server processes (JetStream with ``sync_interval: always``, routes on
loopback, no users) and every service are started at once, with ``BLENDMESH_REPLICAS=3``:
the services create their streams, buckets and consumers while the cluster elects its
meta leader and each new stream elects its own. Ten times the mesh starts and a
25-operation run completes. The starts go two at a time, each on a cluster of its own:
much of a start is waiting on elections and on ``sync_interval: always`` writes, which
the other start's work fills; and two starts sharing the cores slow each cluster's
elections down, so the services meet a cluster still electing no less often than one
start alone does.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from contracts.receipts import RunResult
from services.doors.core.client import MeshClient
from services.doors.core.requests import build_request
from services.runtime.service.settings import Settings
from tests.support.clusters import NatsCluster
from tests.support.meshes import client_mesh

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]

PREFIX = "bmstart"
OPERATIONS = 25
STARTS = 10
AT_ONCE = 2  # starts under way together


def plan(request_id: str) -> dict[str, Any]:
    """Five cubes created, then moved in turn: ``OPERATIONS`` operations in a chain."""
    ops: list[dict[str, Any]] = []
    for i in range(OPERATIONS):
        name = f"Block{i % 5}"
        if i < 5:
            tool, args = "object.create", {"primitive": "cube", "name": name}
        else:
            tool, args = "object.transform", {"name": name, "location": [i * 0.5, i % 3, 0.0]}
        ops.append(
            {
                "operation_id": f"op{i:03d}",
                "tool_name": tool,
                "args": args,
                "depends_on": [f"op{i - 1:03d}"] if i else [],
                "safety_level": "safe_write",
            }
        )
    return {"request_id": request_id, "operations": ops}


async def start_cold_and_run(root: Path) -> tuple[RunResult, float]:
    """A fresh cluster and a mesh on it, started without waiting for anything between;
    the run's result and the seconds from the cluster's start to it."""
    began = time.monotonic()
    cluster = NatsCluster(root / "cluster", None, PREFIX)
    url = await cluster.start()
    settings = Settings(
        home=root / "home", nats_url=url, prefix=PREFIX, user="ana", replicas=3, previews=False
    )
    try:
        async with client_mesh(settings) as (_, bus):
            request = build_request(user="ana", scene_id="cold", plan=plan(root.name))
            result = await MeshClient(bus).run(request, timeout=60)
            return result, round(time.monotonic() - began, 1)
    finally:
        await cluster.stop()


async def test_mesh_started_with_a_fresh_cluster_ten_times_completes_each_run(
    tmp_path: Path,
) -> None:
    took = []
    for first in range(0, STARTS, AT_ONCE):
        attempts = range(first, min(first + AT_ONCE, STARTS))
        # A task group: a start that fails cancels the other, whose cluster still stops.
        async with asyncio.TaskGroup() as group:
            tasks = [
                group.create_task(start_cold_and_run(tmp_path / f"start{a}")) for a in attempts
            ]
        for attempt, task in zip(attempts, tasks, strict=True):
            result, seconds = task.result()
            took.append(seconds)
            assert result.status == "completed", (attempt, result.message)
            assert [r.status for r in result.receipts] == ["succeeded"] * OPERATIONS, attempt
    assert len(took) == STARTS
    print(f"seconds per start and run: {took}")
