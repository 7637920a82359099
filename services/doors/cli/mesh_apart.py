"""Services the embedded mesh runs as child processes of its own, beside the runs.

The audit projection applies every event of every run; on the mesh's event loop it takes
its turns between the run's own awaits, and its CPU with them (ADR 0070). Run apart, it
is the same service as the Procfile's ``python -m services.audit``, started and stopped
with the mesh: one command still starts everything and one stops it, and a child that
dies ends ``Mesh.wait`` as a service task that dies does.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from contracts.errors import BlendmeshError
from services.runtime.service import health
from services.runtime.service.host import Bus
from services.runtime.service.procs import die_with_parent
from services.runtime.service.settings import Settings

READY_WITHIN = 60.0  # seconds a child gets to answer $SRV.PING as its role
STOP_WITHIN = 20.0  # seconds a child gets to finish its batch before it is killed
LOG_TAIL = 2000  # characters of a child's log an error quotes
# The child's CPU priority below the mesh's: on a busy machine the runs' processes go
# first, and the projection catches up in the gaps (it is read, never waited for, by runs).
NICE = 10
# What a child must not take from the mesh's environment: the mesh's own metrics port
# (the child would fight the mesh for it) and a NATS URL other than the mesh's.
NOT_INHERITED = ("NATS_URL", "BLENDMESH_METRICS_PORT", "BLENDMESH_NATS_CREDENTIALS")


class ChildExited(BlendmeshError, RuntimeError):
    """A service the mesh ran as a child process exited, or never became ready."""


def child_env(settings: Settings, url: str, base: Mapping[str, str]) -> dict[str, str]:
    """The child's environment: ``base`` without what only the mesh may use, and the
    settings the service reads, as the mesh's ``settings`` hold them (a mesh started
    from code has no environment that says them)."""
    env = {k: v for k, v in base.items() if k not in NOT_INHERITED}
    env.update(
        {
            "NATS_URL": url,
            "BLENDMESH_NATS_CREDENTIALS": str(settings.credentials_path),
            "BLENDMESH_PREFIX": settings.prefix,
            "BLENDMESH_HOME": str(settings.home),
            "BLENDMESH_ACK_WAIT": repr(settings.ack_wait),
            "BLENDMESH_MAX_DELIVER": str(settings.max_deliver),
            "BLENDMESH_REPLICAS": str(settings.replicas),
            "BLENDMESH_START_WAIT": repr(settings.start_wait),
            "BLENDMESH_TRACE": settings.trace_exporter,
        }
    )
    return env


class ChildService:
    """A service in a child process, as the mesh holds a running service."""

    def __init__(self, name: str, proc: asyncio.subprocess.Process, log: Path) -> None:
        self.name = name
        self.proc = proc
        self.log = log

    async def failed(self) -> BaseException:
        code = await self.proc.wait()
        said = await asyncio.to_thread(_tail, self.log)
        return ChildExited(f"its process exited with code {code}; {said}")

    async def stop(self) -> None:
        """SIGTERM, as the Procfile's lines are stopped; SIGKILL past ``STOP_WITHIN``."""
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.terminate()
            try:
                await asyncio.wait_for(self.proc.wait(), STOP_WITHIN)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    self.proc.kill()
                await self.proc.wait()


async def spawn(name: str, settings: Settings, url: str, probe: Bus) -> ChildService:
    """Start ``python -m services.<name>`` on the mesh at ``url`` and wait until it
    answers ``$SRV.PING`` (``probe`` asks); its output goes to ``<home>/<name>.log``."""
    log = settings.home / f"{name}.log"
    env = child_env(settings, url, settings.env or os.environ)
    out = await asyncio.to_thread(open, log, "ab")
    with out:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            f"services.{name}",
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out,
            stderr=asyncio.subprocess.STDOUT,
            preexec_fn=_child_setup,
        )
    child = ChildService(name, proc, log)
    deadline = time.monotonic() + READY_WITHIN
    try:
        while not await health.ping(probe.nc, name, wait=0.2, prefix=settings.prefix):
            if proc.returncode is not None:
                said = await asyncio.to_thread(_tail, log)
                raise ChildExited(f"it exited with code {proc.returncode}; {said}")
            if time.monotonic() > deadline:
                said = await asyncio.to_thread(_tail, log)
                raise ChildExited(f"it did not answer within {READY_WITHIN:g} s; {said}")
    except BaseException:
        await child.stop()
        raise
    return child


def _child_setup() -> None:
    """In the child before it runs Python: die with the mesh (a killed mesh leaves no
    audit behind) and yield the CPU to the runs."""
    dies = die_with_parent()
    if dies is not None:
        dies()
    os.nice(NICE)


def _tail(log: Path) -> str:
    try:
        text = log.read_text(errors="replace")[-LOG_TAIL:].strip()
    except OSError:
        text = ""
    return f"its log {log} ends: {text}" if text else f"its log {log} is empty"
