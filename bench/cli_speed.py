"""How fast the ``blendmesh`` command answers, as a person at a prompt meets it.

    .venv/bin/python bench/cli_speed.py [--runs 5]

Prints, as rows of issue 24's table: ``blendmesh --help``; a command with ``NATS_URL``
where nothing listens, where something accepts and says nothing, and where NATS answers
but JetStream does not; a one-object edit on a warm mesh (``blendmesh up`` in the
background, then ``blendmesh run --plan``), with where its time goes (the command's
imports, the connection, the run on the mesh); and the memory of the idle ``up`` (its
whole process tree, once its Blenders stopped for idling). Medians of ``--runs``; every
figure is wall time in a child process.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BLENDMESH = str(Path(sys.executable).with_name("blendmesh"))
IDLE = "10"  # BLENDMESH_BRIDGE_IDLE for the warm mesh, seconds
PHASES = """
import sys, time
t0 = time.perf_counter()
import asyncio, json
from pathlib import Path
import services.doors.cli.main, services.doors.cli.scenes  # the rest `blendmesh run` imports
from services.doors.cli.commands import load_plan
from services.doors.cli.common import connected
from services.doors.core.client import MeshClient
from services.doors.core.requests import build_request
from services.runtime.service.settings import Settings
t1 = time.perf_counter()
async def main():
    settings = Settings.from_env()
    t2 = time.perf_counter()
    async with connected(settings, ()) as bus:
        t3 = time.perf_counter()
        plan = load_plan(Path(sys.argv[1]))
        request = build_request(user=settings.user, scene_id="bench", plan=plan)
        result = await MeshClient(bus).run(request)
        t4 = time.perf_counter()
    assert result.status == "completed", result
    print(json.dumps({"imports": t1 - t0, "connect": t3 - t2, "run": t4 - t3}))
asyncio.run(main())
"""
MUTE_NATS = """
import asyncio, json, sys
INFO = {"server_id": "mute", "version": "2.10.0", "proto": 1, "headers": True}
async def handle(reader, writer):
    writer.write(f"INFO {json.dumps(INFO)}\\r\\n".encode())
    while line := await reader.readline():
        if line.startswith(b"PING"):
            writer.write(b"PONG\\r\\n")
        elif line.startswith((b"PUB", b"HPUB")):
            await reader.readexactly(int(line.split()[-1]) + 2)
async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", int(sys.argv[1]))
    await server.serve_forever()
asyncio.run(main())
"""
SILENT = """
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(50)
held = []
while True:
    held.append(s.accept()[0])
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def timed(args: list[str], env: dict[str, str] | None = None) -> tuple[float, int, str]:
    started = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, env=env, check=False, timeout=900)
    return time.perf_counter() - started, done.returncode, done.stderr


def median(args: list[str], runs: int, env: dict[str, str] | None = None) -> float:
    return statistics.median(timed(args, env)[0] for _ in range(runs))


@contextlib.contextmanager
def serving(script: str) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", script, str(port)])
    time.sleep(0.5)
    try:
        yield f"nats://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait()


def unreachable(home: Path, runs: int) -> list[tuple[str, float]]:
    rows = []
    env = {k: v for k, v in os.environ.items() if k != "NATS_URL"}
    cases = [
        ("nothing listens", None),
        ("something accepts and says nothing", SILENT),
        ("NATS answers but JetStream does not", MUTE_NATS),
    ]
    for name, script in cases:
        with contextlib.ExitStack() as stack:
            url = (
                stack.enter_context(serving(script))
                if script
                else f"nats://127.0.0.1:{free_port()}"
            )
            command = [BLENDMESH, "--home", str(home), "runs"]
            seconds = median(command, runs, {**env, "NATS_URL": url})
            rows.append((f"a command with NATS_URL where {name}", seconds))
    return rows


def tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and all its descendants."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        with contextlib.suppress(OSError):
            status = Path(f"/proc/{p}/status").read_text()
            total += int(re.search(r"VmRSS:\s+(\d+)", status).group(1)) * 1024  # type: ignore[union-attr]
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
    return total


def blenders(pid: int) -> int:
    """How many Blender bridges run in ``pid``'s process tree."""
    count, todo = 0, [pid]
    while todo:
        p = todo.pop()
        with contextlib.suppress(OSError):
            count += b"services.bridge" in Path(f"/proc/{p}/cmdline").read_bytes()
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
    return count


def plan_file(folder: Path, i: int, name: str = "Box") -> Path:
    op = {
        "operation_id": "m1",
        "tool_name": "object.transform",
        "depends_on": [],
        "safety_level": "safe_write",
    }
    if i < 0:
        op.update(tool_name="object.create", args={"primitive": "cube", "name": "Box"})
    else:
        op["args"] = {"name": name, "location": [i % 7, 0, 0]}
    path = folder / f"plan{i}.json"
    path.write_text(json.dumps({"request_id": f"bench-{time.time_ns()}-{i}", "operations": [op]}))
    return path


@contextlib.contextmanager
def up(home: Path, **settings: str) -> Iterator[tuple[subprocess.Popen[str], dict[str, str]]]:
    """``blendmesh up`` on ``home`` in the background, with ``settings`` in its
    environment: the process and the environment a command joins it with."""
    env = {k: v for k, v in os.environ.items() if k != "NATS_URL"} | settings
    mesh = subprocess.Popen(
        [BLENDMESH, "--home", str(home), "up", "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        assert mesh.stderr is not None
        banner = mesh.stderr.readline()
        url = re.search(r"NATS_URL=(\S+)", banner).group(1)  # type: ignore[union-attr]
        stderr = mesh.stderr  # read on, so a chatty mesh never blocks on a full pipe
        threading.Thread(target=stderr.read, daemon=True).start()
        yield mesh, {**env, "NATS_URL": url}
    finally:
        mesh.send_signal(2)
        mesh.wait(60)


def warm_mesh(home: Path, runs: int) -> list[tuple[str, float]]:
    # Idle is once the Blenders are stopped for idling (ADR 0033): sooner than the default
    # 120 s, yet far longer than the gaps between the edits measured.
    with up(home, BLENDMESH_BRIDGE_IDLE=IDLE) as (mesh, env):
        command = [BLENDMESH, "--home", str(home), "run", "--scene", "bench", "--plan"]
        _, code, said = timed([*command, str(plan_file(home, -1))], env)
        assert code == 0, said
        walls = [timed([*command, str(plan_file(home, i))], env)[0] for i in range(runs)]
        phases = []
        for i in range(runs):
            out = subprocess.run(
                [sys.executable, "-c", PHASES, str(plan_file(home, 100 + i))],
                capture_output=True,
                text=True,
                env={**env, "BLENDMESH_HOME": str(home)},
                cwd=ROOT,
                check=True,
            )
            phases.append(json.loads(out.stdout.strip().splitlines()[-1]))
        deadline = time.monotonic() + float(IDLE) + 60
        while blenders(mesh.pid) and time.monotonic() < deadline:
            time.sleep(0.5)
        rss = tree_rss(mesh.pid)
    rows = [("a one-object edit on a warm mesh, CLI wall time", statistics.median(walls))]
    for phase in ("imports", "connect", "run"):
        rows.append((f"  of which {phase}", statistics.median(p[phase] for p in phases)))
    rows.append(("idle `blendmesh up` memory (MiB RSS, process tree)", rss / 2**20))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="blendmesh-cli-bench-") as tmp:
        home = Path(tmp)
        rows = [("`blendmesh --help`", median([BLENDMESH, "--help"], args.runs))]
        rows += unreachable(home / "unreachable", args.runs)
        rows += warm_mesh(home / "warm", args.runs)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| | measured |")
    print("|---|---|")
    for name, value in rows:
        unit = "" if "MiB" in name else " s"
        print(f"| {name} | {value:.2f}{unit} |")


if __name__ == "__main__":
    main()
