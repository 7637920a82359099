"""A rolling upgrade on a real mesh (ADR 0053): executors of two catalogs bind the one
consumer; a run pinned to one catalog runs only on an executor of it, and with none left
it fails CATALOG_UNSERVED after the wait instead of running elsewhere."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from contracts.events import AnyEvent, Approved, Executed, Planned
from services.executor.adapters.catalog import KvCatalog
from services.runtime.nats.access import ADMIN, login_for
from services.runtime.nats.history import read_run
from services.runtime.service.host import Bus
from tests.e2e.test_scaling import waiting_executors
from tests.support.meshes import BLENDMESH, blendmesh_up, command_env

WAIT = 8  # seconds a run waits for an executor of its catalog, here
# One Blender, so one pull, per executor process: the waits below count executors by their
# pulls, and a run pinned to one catalog goes round the pulls queued on the consumer. With
# a pool per executor (ADR 0078), the stock one's idle loops could take a pinned run's
# every hand-back within this short wait, while the upgraded one waited behind them.
BRIDGES = {"BLENDMESH_BRIDGES": "1"}


@contextmanager
def next_release_executor(home: Path, url: str, credentials: Path) -> Iterator[None]:
    """An executor process of a later release (one tool more) on the mesh at ``url``."""
    env = command_env(
        {
            "NATS_URL": url,
            "BLENDMESH_NATS_CREDENTIALS": str(credentials),
            "BLENDMESH_HOME": str(home),
            "BLENDMESH_CATALOG_WAIT": str(WAIT),
            **BRIDGES,
        }
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.next_release_executor"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        yield
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def run(url: str, credentials: Path, home: Path, prompt: str, scene: str) -> dict[str, object]:
    env = command_env({"NATS_URL": url, "BLENDMESH_NATS_CREDENTIALS": str(credentials)})
    proc = subprocess.run(
        [BLENDMESH, "--home", str(home), "run", "--json", "--scene", scene, prompt],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert proc.stdout, proc.stderr
    return dict(json.loads(proc.stdout))


def waiting_said(url: str, credentials: Path, home: Path) -> str:
    """What an executor's line of ``blendmesh status --json`` says it leaves to others,
    once one says so (within the run's wait)."""
    env = command_env({"NATS_URL": url, "BLENDMESH_NATS_CREDENTIALS": str(credentials)})
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        proc = subprocess.run(
            [BLENDMESH, "--home", str(home), "status", "--json"],
            capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        status = json.loads(proc.stdout)
        (executors,) = [s for s in status["services"] if s["role"] == "executor"]
        for instance in executors["instances"]:
            if instance.get("waiting"):
                return str(instance["waiting"][0])
        time.sleep(0.2)
    raise AssertionError("no executor said which run it left to another catalog")


async def catalog_published(bus: Bus, other_than: str | None, tries: int = 600) -> str:
    """The catalog version in the bucket, once it is not ``other_than``."""
    for _ in range(tries):
        found = await KvCatalog(bus.js, bus.prefix).get()
        if found is not None and found.version != other_than:
            return found.version
        await asyncio.sleep(0.1)
    raise AssertionError(f"no catalog other than {other_than} was published")


def one(events: list[AnyEvent], kind: type[Executed] | type[Planned] | type[Approved]) -> object:
    found = [e for e in events if isinstance(e, kind)]
    assert len(found) == 1, events
    return found[0]


async def test_rolling_upgrade_when_catalogs_differ_runs_each_pinned_run_on_its_own(
    tmp_path: Path,
) -> None:
    mesh_home = tmp_path / "mesh"
    credentials = mesh_home / "nats-credentials.json"
    with blendmesh_up(mesh_home, env={"BLENDMESH_CATALOG_WAIT": str(WAIT), **BRIDGES}) as up:
        url = up.nats_url
        assert await waiting_executors(url, "blendmesh", 1, credentials) >= 1
        bus = await Bus.open(url, "blendmesh", "probe", login_for(credentials, ADMIN))
        try:
            stock = await catalog_published(bus, None)
            with next_release_executor(tmp_path / "next", url, credentials):
                assert await waiting_executors(url, "blendmesh", 2, credentials) >= 2
                upgraded = await catalog_published(bus, stock)
                # New plans are made against the newest catalog, and only its executor
                # runs them, though the stock one waits on the same consumer.
                for i in range(4):
                    asked = f"add a cube named C{i}"
                    result = run(url, credentials, tmp_path / "c", asked, f"up{i}")
                    # The whole result: a failed run's reason is in its failure and message.
                    assert result["status"] == "completed", json.dumps(result)[:4000]
                    events = await read_run(bus.js, "blendmesh", str(result["run_id"]))
                    planned = one(events, Planned)
                    approved = one(events, Approved)
                    executed = one(events, Executed)
                    assert isinstance(planned, Planned) and isinstance(approved, Approved)
                    assert isinstance(executed, Executed)
                    assert planned.catalog_version == approved.catalog_version == upgraded
                    assert executed.catalog_version == upgraded != stock
                    assert executed.blendmesh_version == planned.blendmesh_version != ""
                    assert executed.blender_version == planned.blender_version != ""
            # The upgraded executor is gone: a run pinned to its catalog is handed back by
            # the stock one until the wait is spent, then fails, naming both catalogs; while
            # it waits, `blendmesh status` says why.
            late = asyncio.create_task(
                asyncio.to_thread(
                    run, url, credentials, tmp_path / "c", "add a cone named Late", "late"
                )
            )
            said = await asyncio.to_thread(waiting_said, url, credentials, tmp_path / "c")
            assert f"pinned to tool catalog {upgraded}; this executor serves {stock}" in said
            failed = await late
            failure = failed["failure"]
            assert isinstance(failure, dict), failed
            assert failure["error_code"] == "CATALOG_UNSERVED", failed
            assert upgraded in failure["retry_hint"] and stock in failure["retry_hint"]
            events = await read_run(bus.js, "blendmesh", str(failed["run_id"]))
            executed = one(events, Executed)
            assert isinstance(executed, Executed)
            assert executed.revision is None
            assert {r.status for r in executed.receipts} == {"skipped"}
            waited = executed.at - one_at(events, Approved)
            assert waited >= WAIT, f"it failed after {waited:.1f} s, before the wait"
        finally:
            await bus.close()


def one_at(events: list[AnyEvent], kind: type[Approved]) -> float:
    found = one(events, kind)
    assert isinstance(found, kind)
    return found.at
