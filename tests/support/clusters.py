"""A JetStream cluster for tests: three nats-server processes on loopback.

Each server is an ``EmbeddedNats`` with the product's own cluster config
(``services.runtime.server.cluster.ClusterNode``, the one README shows): its own store,
``sync_interval: always``, a distinct ``server_name``, the role users of
``services.runtime.nats.access`` and routes to every server, which log in with a password.
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

from services.runtime.nats import access
from services.runtime.server.cluster import ClusterNode
from services.runtime.server.embedded import EmbeddedNats

PORT_ATTEMPTS = 3  # cluster starts on fresh ports after one lost a port to another process


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
        self._root, self._credentials, self._prefix, self._size = root, credentials, prefix, size
        self.servers: dict[str, EmbeddedNats] = {}
        self._build(root)
        self.url = ""

    def _build(self, stores: Path) -> None:
        """Servers on cluster ports free now, keeping their stores in ``stores``: each
        lists every port in its routes, so the ports are chosen before any server binds
        one."""
        credentials = self._credentials
        passwords = access.load_or_create(credentials) if credentials else {}
        routes = tuple(f"127.0.0.1:{port}" for port in free_ports(self._size))
        self.servers = {}
        for i, listen in enumerate(routes, start=1):
            node = ClusterNode(f"n{i}", listen, routes, route_password=passwords.get(access.ADMIN))
            store = stores / node.server_name
            self.servers[node.server_name] = (
                EmbeddedNats.secured(store, credentials, self._prefix, node=node)
                if credentials
                else EmbeddedNats(store, node=node)
            )

    async def start(self) -> str:
        """Start every server; a start that fails stops the ones that started.

        Another process may bind a chosen cluster port before its server does (other
        tests start servers on ports of the OS's choosing all the time). Its server then
        exits, and the others' routes to that port would reach the stranger: a route
        that reaches another server's client port is refused and dials again at once,
        for ever, at full CPU. So the cluster starts again on new ports, a few times.
        """
        for attempt in range(1, PORT_ATTEMPTS + 1):
            started = await asyncio.gather(
                *(server.start() for server in self.servers.values()), return_exceptions=True
            )
            failed = [r for r in started if isinstance(r, BaseException)]
            if not failed:
                self.url = ",".join(str(url) for url in started)
                return self.url
            await self.stop()
            taken = [f for f in failed if "address already in use" in str(f)]
            if attempt == PORT_ATTEMPTS or len(taken) < len(failed):
                raise failed[0]
            self._build(self._root / f"attempt{attempt + 1}")  # no state of the last one
        raise AssertionError("unreachable")

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
