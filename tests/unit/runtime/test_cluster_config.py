"""A cluster node's nats-server config: the cluster block, routes that log in, and the rest
of blendmesh's config (``sync_interval: always``, the role users) unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.runtime.nats import access
from services.runtime.nats.login import servers
from services.runtime.server.cluster import ClusterConfigError, ClusterNode, parse_routes
from services.runtime.server.embedded import render_config

ROUTES = ("10.0.0.1:6222", "10.0.0.2:6222", "10.0.0.3:6222")


def test_render_config_when_cluster_node_adds_name_cluster_and_logged_in_routes() -> None:
    node = ClusterNode("n2", "0.0.0.0:6222", ROUTES, route_password="p@ss/word")
    users = access.authorization({role: "pw" for role in access.ROLES}, "blendmesh")
    config = render_config(Path("/s"), Path("/r"), 4222, users, node, host="0.0.0.0")
    assert 'listen: "0.0.0.0:4222"' in config
    assert "sync_interval: always" in config and 'server_name: "n2"' in config
    assert 'name: "blendmesh"' in config and 'listen: "0.0.0.0:6222"' in config
    assert '"user": "route", "password": "p@ss/word"' in config
    assert '"nats://route:p%40ss%2Fword@10.0.0.3:6222"' in config
    assert config.index("cluster {") < config.index('authorization: {"users"')


def test_render_config_when_no_cluster_node_has_no_cluster_block() -> None:
    config = render_config(Path("/s"), Path("/r"))
    assert "cluster" not in config and "server_name" not in config
    assert 'listen: "127.0.0.1:-1"' in config


@pytest.mark.parametrize(
    ("listen", "routes", "message"),
    [
        ("6222", ROUTES, "'6222' is not host:port"),
        ("0.0.0.0:6222", ("nats://a/b:1",), "is not host:port"),
        ("0.0.0.0:6222", (), "needs the routes"),
    ],
)
def test_cluster_node_when_addresses_bad_raises_naming_them(
    listen: str, routes: tuple[str, ...], message: str
) -> None:
    with pytest.raises(ClusterConfigError, match=message):
        ClusterNode("n1", listen, routes)


def test_parse_routes_when_urls_or_addresses_gives_addresses() -> None:
    text = "nats://10.0.0.1:6222, 10.0.0.2:6222,,"
    assert parse_routes(text) == ("10.0.0.1:6222", "10.0.0.2:6222")


def test_servers_when_nats_url_lists_a_cluster_gives_each_server() -> None:
    url = "nats://a:4222, nats://b:4222,nats://c:4222"
    assert servers(url) == ["nats://a:4222", "nats://b:4222", "nats://c:4222"]
    assert servers("nats://a:4222") == ["nats://a:4222"]
