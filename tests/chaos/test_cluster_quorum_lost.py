"""Two of three cluster servers gone: a publish to the event log says so, by name and count.

Before, a submit failed after 10 s with nats-py's bare ``nats: timeout``. A real cluster
of three nats-server processes (``tests/support/clusters.py``), the event log with three
replicas; two servers are killed and an event is published through the product's own
publisher, as every door does.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from contracts import subjects
from contracts.events import RunRequested
from services.runtime.nats import access
from services.runtime.nats.quorum import JetStreamUnavailable
from services.runtime.server.nats_setup import prepare_streams
from services.runtime.service.host import Bus
from tests.support.clusters import NatsCluster, stream_leader

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

PREFIX = "bmquorum"
STREAM = subjects.stream_name(PREFIX)


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[NatsCluster]:
    nodes = NatsCluster(tmp_path / "cluster", tmp_path / "home" / "nats-credentials.json", PREFIX)
    await nodes.start()
    try:
        yield nodes
    finally:
        await nodes.stop()


def requested() -> RunRequested:
    run = f"run-{uuid.uuid4().hex[:12]}"
    return RunRequested(
        event_id=str(uuid.uuid4()),
        at=time.time(),
        run_id=run,
        request_id=f"req-{run}",
        thread_id=f"thread-{run}",
        user="ana",
        scene_id="quorum",
        prompt="add a cube",
    )


async def test_publish_when_two_of_three_servers_are_gone_names_the_stream_and_the_count(
    cluster: NatsCluster, tmp_path: Path
) -> None:
    admin = access.login_for(tmp_path / "home" / "nats-credentials.json", access.ADMIN)
    await prepare_streams(cluster.url, PREFIX, admin, replicas=3)
    bus = await Bus.open(cluster.url, PREFIX, "test-quorum", admin, replicas=3)
    try:
        await bus.publisher.publish(requested())  # stored while all three are up
        leader = await stream_leader(bus.js, STREAM)
        survivor = next(name for name in cluster.servers if name != leader)
        for name in cluster.servers:
            if name != survivor:
                cluster.kill(name)
        with pytest.raises(JetStreamUnavailable) as info:
            await bus.publisher.publish(requested())
        said = str(info.value)
        assert f"JetStream has no leader for {STREAM}: 1 of 3 servers reachable" in said
        assert "start the stopped servers" in said and "send it again" in said
    finally:
        await bus.close()
