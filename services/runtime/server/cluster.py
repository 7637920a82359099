"""One server of a JetStream cluster: the part of its config that makes it a cluster node.

Three (or five) nats-server processes, each with its own store, find each other through
``routes`` and elect leaders by Raft; with ``BLENDMESH_REPLICAS=3`` every stream keeps a
copy on three of them and outlives the loss of any one. ``nats_setup.render_config`` adds
this block to the config every blendmesh server gets (``sync_interval: always``, the role
users); docs/running.md shows a rendered node.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from urllib.parse import quote

from contracts.errors import BlendmeshError

ROUTE_USER = "route"  # how the servers log in to each other


class ClusterConfigError(BlendmeshError, ValueError):
    """A cluster node's settings cannot make a cluster; the message says which and why."""


@dataclass(frozen=True)
class ClusterNode:
    """One server's place in a cluster.

    ``routes`` are the ``host:port`` cluster listeners of every server, its own included
    (a server skips the route to itself), so each node's config lists the same routes.
    With ``route_password`` the servers log in to each other as ``route``: a route sees and
    may send every message, so an open cluster port would bypass the role users.
    """

    server_name: str  # unique in the cluster; JetStream names stream leaders by it
    listen: str  # host:port where the other servers' routes connect, e.g. 0.0.0.0:6222
    routes: tuple[str, ...]
    route_password: str | None = None
    cluster_name: str = "blendmesh"

    def __post_init__(self) -> None:
        if not self.server_name or any(c.isspace() for c in self.server_name):
            raise ClusterConfigError(f"server name {self.server_name!r} must be one word")
        for address in (self.listen, *self.routes):
            host, _, port = address.rpartition(":")
            if not host or not port.isdigit() or "/" in address:
                raise ClusterConfigError(
                    f"{address!r} is not host:port (a cluster listener, e.g. 10.0.0.1:6222)"
                )
        if not self.routes:
            raise ClusterConfigError("a cluster node needs the routes of its servers")


def parse_routes(text: str) -> tuple[str, ...]:
    """``host:port`` routes from a comma-separated list (``nats://`` prefixes allowed)."""
    return tuple(r.strip().removeprefix("nats://") for r in text.split(",") if r.strip())


def render_cluster(node: ClusterNode) -> str:
    """The ``server_name`` and ``cluster`` block of one node's nats-server config."""
    credentials = ""
    block = [f"  name: {json.dumps(node.cluster_name)}", f"  listen: {json.dumps(node.listen)}"]
    if node.route_password is not None:
        credentials = f"{ROUTE_USER}:{quote(node.route_password, safe='')}@"
        login = {"user": ROUTE_USER, "password": node.route_password}
        block.append(f"  authorization: {json.dumps(login)}")
    routes = [f"nats://{credentials}{route}" for route in node.routes]
    block.append(f"  routes: {json.dumps(routes)}")
    return f"server_name: {json.dumps(node.server_name)}\ncluster {{\n" + "\n".join(block) + "\n}\n"
