"""Throughput of one executor against two, on independent scenes, from one run.

    .venv/bin/python bench/executors.py [--runs 16] [--deployed-only]

Each run is the 25-operation plan of bench/plan25.py on its own scene (after a setup run
that creates the scene's 20 objects). All runs are submitted at once; the figure is runs
and operations per second until the last one completes.

Executors are measured as they are deployed (docs/bus.md §8, the Procfile's executor
line): the mesh runs every other service, and each executor is a process of its own,
``python -m services.executor`` with only ``NATS_URL``, the credentials file and the
prefix, each with its own bridge and preview worker. The embedded mesh's executors
(``Settings(executors=N)``), which share one process and one interpreter, are measured
too, and so are processes with previews off. For each, the CPU every kind of process used
in the timed window is printed, as a share of one core, and so is what the machine's
other programs took: a second executor can only help while one executor's runs leave
cores idle, and a run keeps busy not only its executor and bridge but nats-server, the
mesh's other services (the audit projection most) and the preview worker's Blender.
``--deployed-only`` measures executor processes with previews alone: two meshes instead
of six. ``--only "as processes, previews off"`` measures that configuration alone, the
quickest check that the bench still runs (no previews' Blender starts or renders).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import proctree
from plan25 import plan25, setup_plan

from contracts import subjects
from services.doors.cli.mesh import Mesh
from services.doors.core.client import MeshClient
from services.doors.core.requests import build_request
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
READY_WITHIN = 120.0  # seconds for executor processes to load Blender and bind
STOP_WITHIN = 20.0  # seconds an executor process gets to stop before it is killed
LOG_TAIL = 3000  # characters of an executor's log shown when it did not start
MAX_RUNS = 256  # scenes set up and run at once


@dataclass(frozen=True)
class Measured:
    """Seconds until the last run completed, and the CPU each kind of process used."""

    seconds: float
    cpu: dict[str, tuple[int, float]]  # kind -> (processes, CPU seconds)


async def throughput(executors: int, runs: int, processes: bool = True) -> float:
    """Seconds to complete ``runs`` independent runs with ``executors`` executors, as
    separate processes (``processes``) or as tasks of the embedded mesh."""
    return (await measure(executors, runs, processes=processes)).seconds


async def measure(
    executors: int, runs: int, *, processes: bool = True, previews: bool = True
) -> Measured:
    """A fresh mesh with ``executors`` executors (processes, or tasks of the mesh): the
    time ``workload`` took and the CPU used meanwhile. Executor processes are stopped
    before the mesh, also when the measurement fails."""
    with tempfile.TemporaryDirectory(prefix="blendmesh-bench-") as tmp:
        home = Path(tmp)
        settings = Settings(
            home=home / "mesh",
            prefix="bench",
            user="bench",
            executors=executors,
            previews=previews,
        )
        services = [s for s in Mesh.all_services() if not (processes and s == "executor")]
        async with Mesh(settings, services) as mesh:
            # As admin: the bench watches the services' consumers, which only admin may
            # inspect (docs/adr/0015-tenancy-user-logins.md).
            bus = await Bus.open(mesh.url, settings.prefix, "bench", mesh.login("admin"))
            started: list[subprocess.Popen[bytes]] = []
            try:
                if processes:
                    for i in range(executors):
                        started.append(spawn_executor(settings, mesh.url, home / f"executor{i}"))
                    await wait_for_executors(bus, started, home)
                return await workload(MeshClient(bus), runs)
            finally:
                stop_executors(started)
                await bus.close()


def spawn_executor(settings: Settings, url: str, home: Path) -> subprocess.Popen[bytes]:
    """``python -m services.executor`` as on another machine: its own home, the mesh's
    URL, credentials file and prefix; its output goes to ``<home>.log``."""
    env = {
        **os.environ,
        "NATS_URL": url,
        "BLENDMESH_NATS_CREDENTIALS": str(settings.credentials_path),
        "BLENDMESH_REQUIRE_AUTH": "1",
        "BLENDMESH_PREFIX": settings.prefix,
        "BLENDMESH_HOME": str(home),
        "BLENDMESH_PREVIEWS": "1" if settings.previews else "0",
        # Processes of one bridge each: this compares processes; table.py's load row
        # measures one executor's pool.
        "BLENDMESH_BRIDGES": "1",
        "PYTHONPATH": str(ROOT),
    }
    with open(home.with_suffix(".log"), "wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "services.executor"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )


async def wait_for_executors(bus: Bus, procs: list[subprocess.Popen[bytes]], home: Path) -> None:
    """Until every executor waits on the shared durable consumer (each one pulls once it
    has started its bridge and published the catalog)."""
    stream = subjects.stream_name(bus.prefix)
    deadline = time.monotonic() + READY_WITHIN
    while time.monotonic() < deadline:
        if any(p.poll() is not None for p in procs):
            break
        try:
            info = await bus.js.consumer_info(stream, "executor")
            if info.num_waiting >= len(procs):
                return
        except Exception:  # noqa: BLE001 - the consumer appears with the first executor
            pass
        await asyncio.sleep(0.1)
    logs = "\n".join(
        f"--- executor{i} (exit code {p.poll()}):\n"
        + (home / f"executor{i}.log").read_text(errors="replace")[-LOG_TAIL:]
        for i, p in enumerate(procs)
    )
    raise RuntimeError(
        f"of {len(procs)} executor process(es), not all were pulling within {READY_WITHIN:g} s; "
        f"their logs:\n{logs}"
    )


async def caught_up(bus: Bus, durable: str, limit: float = 120.0) -> None:
    """Until ``durable`` has consumed and acknowledged every message in the log."""
    stream = subjects.stream_name(bus.prefix)
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        info = await bus.js.consumer_info(stream, durable)
        if info.num_pending == 0 and info.num_ack_pending == 0:
            return
        await asyncio.sleep(0.1)
    raise RuntimeError(f"the {durable} consumer was still behind the log after {limit:g} s")


def stop_executors(procs: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM to each (an executor finishes its message and closes its bridges), then
    a kill for any that has not exited within ``STOP_WITHIN`` seconds."""
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=STOP_WITHIN)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def workload(client: MeshClient, runs: int) -> Measured:
    """Set up ``runs`` scenes, let their previews and the audit projection finish, then
    time the 25-operation runs on all of them, submitted at once."""
    scenes = [f"scene{i:02d}" for i in range(runs)]
    setups = [
        build_request(user="bench", scene_id=s, plan={**setup_plan(), "request_id": f"setup-{s}"})
        for s in scenes
    ]
    for result in await asyncio.gather(*(client.run(r) for r in setups)):
        assert result.status == "completed", result.message
    # The setups' pictures and audit records are not part of the timed work.
    await proctree.idle("preview bridge")
    await caught_up(client.bus, "audit")
    requests = [
        build_request(user="bench", scene_id=s, plan={**plan25(1), "request_id": f"work-{s}"})
        for s in scenes
    ]
    before = proctree.snapshot()
    started = time.perf_counter()
    results = await asyncio.gather(*(client.run(r) for r in requests))
    elapsed = time.perf_counter() - started
    after = proctree.snapshot()
    failed = [r.message for r in results if r.status != "completed"]
    assert not failed, failed
    return Measured(elapsed, proctree.cpu_by_kind(before, after))


CONFIGS: dict[str, tuple[str, dict[str, bool]]] = {  # name -> (column, measure's options)
    "in one process": ("one proc", {"processes": False}),
    "as processes": ("procs", {"processes": True}),
    "as processes, previews off": ("no prev", {"processes": True, "previews": False}),
}
DEPLOYED = "as processes"  # the headline's configuration


def _ours(m: Measured) -> float:
    """CPU seconds this bench's processes used in the timed window."""
    return sum(used for kind, (_, used) in m.cpu.items() if kind != proctree.OUTSIDE)


def report(figures: dict[tuple[str, int], Measured], runs: int) -> None:
    """Times, then CPU by kind of process, then the speed-ups (the last is the headline)
    for each configuration measured; "as processes" always is."""
    cores = os.cpu_count() or 1
    print(f"{runs} runs of 25 operations on independent 20-object scenes, all at once")
    print(f"{'':40}{'seconds':>8}{'runs/s':>8}{'ops/s':>7}{'CPU ms/run':>12}{'others':>8}")
    for (name, n), m in figures.items():
        label = f"{name}, {n} executor{'s' if n > 1 else ''}"
        ours = _ours(m)
        others = m.cpu.get(proctree.OUTSIDE, (0, 0.0))[1] / m.seconds
        print(
            f"{label:40}{m.seconds:8.2f}{runs / m.seconds:8.1f}{runs * 25 / m.seconds:7.0f}"
            f"{1000 * ours / runs:12.0f}{others:8.0%}"
        )
    print("(CPU ms/run: this bench's processes; others: the machine's other programs, of one core)")
    print(f"\nCPU in the timed window, % of one core ({cores} cores: {100 * cores}% in all),")
    print("[processes of the kind]; columns: configuration above, executors")
    print(f"{'':16}" + "".join(f"{CONFIGS[name][0] + ' ' + str(n):>13}" for name, n in figures))
    for kind in proctree.KINDS:
        cells = []
        for m in figures.values():
            count, used = m.cpu.get(kind, (0, 0.0))
            share = f"{100 * used / m.seconds:.0f}%"
            cells.append(f"{share} [{count}]" if count else share if kind in m.cpu else "-")
        if any(c != "-" for c in cells):
            print(f"{kind:16}" + "".join(f"{c:>13}" for c in cells))
    print("(this process: the mesh's other services, the client, and in one process the executors)")
    print()
    for name in dict.fromkeys(name for name, _ in figures):
        one, two = figures[(name, 1)], figures[(name, 2)]
        # A second executor gains only the cores one executor's runs leave idle (and
        # what it defers past the window: previews render at the lowest priority).
        busy = _ours(one) / one.seconds / cores
        print(
            f"speed-up of two executors over one, {name}: {one.seconds / two.seconds:.2f}x "
            f"(one executor kept {busy:.0%} of the {cores} cores busy)"
        )
    headline = DEPLOYED if (DEPLOYED, 1) in figures else next(iter(figures))[0]
    speedup = figures[(headline, 1)].seconds / figures[(headline, 2)].seconds
    deployed = ", as deployed" if headline == DEPLOYED else ""
    print(f"speed-up of two executors over one: {speedup:.2f}x ({headline}{deployed})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=16)
    parser.add_argument("--deployed-only", action="store_true", help=f"measure {DEPLOYED!r} alone")
    parser.add_argument("--only", choices=sorted(CONFIGS), help="measure this configuration alone")
    args = parser.parse_args()
    if not 1 <= args.runs <= MAX_RUNS:
        parser.error(f"--runs {args.runs}: give 1 to {MAX_RUNS} runs")
    only = DEPLOYED if args.deployed_only else args.only
    configs = {only: CONFIGS[only]} if only else CONFIGS
    figures = {
        (name, n): asyncio.run(measure(n, args.runs, **options))
        for name, (_, options) in configs.items()
        for n in (1, 2)
    }
    report(figures, args.runs)


if __name__ == "__main__":
    main()
