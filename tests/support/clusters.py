"""A JetStream cluster for tests: three nats-server processes on loopback.

Each server is an ``EmbeddedNats`` with the product's own cluster config
(``services.runtime.cluster.ClusterNode``, the one README shows): its own store,
``sync_interval: always``, a distinct ``server_name``, the role users of
``services.runtime.access`` and routes to every server, which log in with a password.
Without credentials the servers are plain ones, as an operator might run them: anyone may
connect, and the services create the streams they use.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
from pathlib import Path

from nats.js import JetStreamContext

from services.runtime import access
from services.runtime.cluster import ClusterNode
from services.runtime.embedded import EmbeddedNats


def free_ports(count: int) -> list[int]:
    """Ports nothing listens on now; held open together so that no two are the same."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]


class NatsCluster:
    """``size`` servers named n1, n2, ... whose users' passwords are in ``credentials``
    (None: plain servers that admit anyone).

    ``url`` lists every server, comma separated, as ``NATS_URL`` would on a cluster.
    """

    def __init__(self, root: Path, credentials: Path | None, prefix: str, size: int = 3) -> None:
        passwords = access.load_or_create(credentials) if credentials else {}
        routes = tuple(f"127.0.0.1:{port}" for port in free_ports(size))
        self.servers: dict[str, EmbeddedNats] = {}
        for i, listen in enumerate(routes, start=1):
            node = ClusterNode(f"n{i}", listen, routes, route_password=passwords.get(access.ADMIN))
            store = root / node.server_name
            self.servers[node.server_name] = (
                EmbeddedNats.secured(store, credentials, prefix, node=node)
                if credentials
                else EmbeddedNats(store, node=node)
            )
        self.url = ""

    async def start(self) -> str:
        urls = await asyncio.gather(*(server.start() for server in self.servers.values()))
        self.url = ",".join(urls)
        return self.url

    def kill(self, server_name: str) -> int:
        """SIGKILL one server, as a machine that loses power; returns its pid."""
        pid = self.servers[server_name].pid
        assert pid is not None, f"{server_name} is not running"
        os.kill(pid, signal.SIGKILL)
        return pid

    async def stop(self) -> None:
        await asyncio.gather(*(server.stop() for server in self.servers.values()))


async def stream_leader(js: JetStreamContext, stream: str) -> str:
    """The ``server_name`` of the server that leads ``stream`` now."""
    info = await js.stream_info(stream)
    assert info.cluster is not None and info.cluster.leader, f"{stream} has no leader"
    return info.cluster.leader
