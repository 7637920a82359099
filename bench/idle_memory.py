"""What an idle ``blendmesh up`` keeps in memory, and what the first run after idling pays.

    .venv/bin/python bench/idle_memory.py [--idle 10]

Starts ``blendmesh up`` as a user does (its own home, an embedded nats-server on a free
port) with ``BLENDMESH_BRIDGE_IDLE=--idle`` seconds, and prints, from that one run, the
resident memory of its whole process tree (and how much of it is Blender): when it says
it is up, once its Blenders have idled out, right after a run (both Blenders working),
and idled out again; then the wall time of a one-object edit when its Blender was
stopped (it pays the start) beside the same edit on a warm Blender. ADR 0033.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.cli_speed import BLENDMESH, plan_file, timed, tree_rss
from tests.support.bridges import bridge_pids

MiB = 2**20


def blender_rss(up: int) -> tuple[int, int]:
    """(how many Blender bridges, their resident bytes) under the ``up`` process tree."""
    pids: list[int] = []
    todo = [up]
    while todo:  # the bridges are the executors' children, wherever those run
        p = todo.pop()
        pids += bridge_pids(p)
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                todo += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
    return len(pids), sum(tree_rss(p) for p in pids)


def until_no_blender(up: int, within: float) -> float:
    """Seconds until no bridge is left under ``up``; fails past ``within``."""
    began = time.monotonic()
    while blender_rss(up)[0]:
        if time.monotonic() - began > within:
            raise SystemExit(f"a Blender was still running {within:g} s later")
        time.sleep(0.25)
    return time.monotonic() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--idle", type=float, default=10.0, help="BLENDMESH_BRIDGE_IDLE")
    args = parser.parse_args()
    rows: list[tuple[str, str]] = []

    def memory(when: str, pid: int) -> None:
        count, blender = blender_rss(pid)
        rows.append(
            (
                f"`blendmesh up` memory {when}",
                f"{tree_rss(pid) / MiB:.0f} MiB RSS ({count} Blender: {blender / MiB:.0f} MiB)",
            )
        )

    with tempfile.TemporaryDirectory(prefix="blendmesh-idle-bench-") as tmp:
        home = Path(tmp)
        env = {k: v for k, v in os.environ.items() if k != "NATS_URL"}
        env["BLENDMESH_BRIDGE_IDLE"] = f"{args.idle:g}"
        up = subprocess.Popen(
            [BLENDMESH, "--home", str(home), "up", "--port", "0"],
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,
        )
        try:
            assert up.stderr is not None
            banner = up.stderr.readline()
            found = re.search(r"NATS_URL=(\S+)", banner)
            if found is None:
                raise SystemExit(f"blendmesh up did not start: {banner}")
            stderr = up.stderr  # read on, so a chatty mesh never blocks on a full pipe
            threading.Thread(target=stderr.read, daemon=True).start()
            env["NATS_URL"] = found.group(1)
            command = [BLENDMESH, "--home", str(home), "run", "--scene", "bench", "--plan"]
            memory("when it says it is up", up.pid)
            waited = until_no_blender(up.pid, args.idle + 120)
            memory(f"idle ({waited:.0f} s later)", up.pid)
            first, code, said = timed([*command, str(plan_file(home, -1))], env)
            assert code == 0, said
            memory("right after a run", up.pid)
            until_no_blender(up.pid, args.idle + 120)
            memory("idle again", up.pid)
            cold, code, said = timed([*command, str(plan_file(home, 1))], env)
            assert code == 0, said
            warm, code, said = timed([*command, str(plan_file(home, 2))], env)
            assert code == 0, said
        finally:
            up.send_signal(2)
            up.wait(60)
    rows.append(("first run (creates the scene), its Blender stopped", f"{first:.2f} s"))
    rows.append(("a one-object edit, its Blender stopped (pays the start)", f"{cold:.2f} s"))
    rows.append(("the same edit, its Blender warm", f"{warm:.2f} s"))
    print(f"BLENDMESH_BRIDGE_IDLE={args.idle:g}; load average {os.getloadavg()[0]:.1f}")
    print("| | measured |")
    print("|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()
