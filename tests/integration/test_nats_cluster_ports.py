"""The test cluster starts even when another process takes one of its ports first."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.support import clusters
from tests.support.clusters import NatsCluster

pytestmark = pytest.mark.timeout(60)


async def test_cluster_when_a_chosen_port_is_taken_starts_again_on_new_ports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as stranger:
        stranger.bind(("127.0.0.1", 0))
        stranger.listen()
        taken = stranger.getsockname()[1]
        chosen = iter([[*clusters.free_ports(2), taken]])
        free_ports = clusters.free_ports
        monkeypatch.setattr(clusters, "free_ports", lambda n: next(chosen, None) or free_ports(n))
        cluster = NatsCluster(tmp_path / "cluster", None, "bmports")
        assert cluster.servers["n3"].node is not None
        try:
            url = await cluster.start()
            assert len(url.split(",")) == 3
            routes = {s.node.listen for s in cluster.servers.values() if s.node is not None}
            assert f"127.0.0.1:{taken}" not in routes  # the second try's ports
            assert (tmp_path / "cluster" / "attempt2" / "n1").is_dir()
        finally:
            await cluster.stop()


async def test_cluster_when_start_fails_otherwise_stops_what_started_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster = NatsCluster(tmp_path / "cluster", None, "bmports")
    broken = cluster.servers["n2"]

    async def refuses(timeout: float = 10.0) -> str:
        raise RuntimeError("n2 has no binary")

    monkeypatch.setattr(broken, "start", refuses)
    with pytest.raises(RuntimeError, match="n2 has no binary"):
        await cluster.start()
    assert all(s.pid is None for s in cluster.servers.values())  # n1 and n3 were stopped
