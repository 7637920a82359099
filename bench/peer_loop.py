"""The peer: a blender-mcp style loop, one warm Blender answering one JSON command per
operation over a pipe, with none of blendmesh's guarantees (no journal, no fingerprint,
no checkpoint, no events).

    .venv/bin/python bench/peer_loop.py [--runs 30] [--objects 20]

The driver starts this file again as the Blender side (``--serve``), sends the setup and
then, per run, the 25 operations of bench/plan25.py one command at a time, waiting for
each answer as an MCP host waits for each tool call. Prints the p50 of one 25-operation
run. bench/table.py uses ``peer_latencies`` for its peer row.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from plan25 import plan25, setup_plan


def serve() -> None:
    """The Blender side: apply each command line with bpy, answer one JSON line."""
    import bpy
    from raw_bpy import apply  # imports bpy: only ever in this child process

    bpy.ops.wm.read_factory_settings(use_empty=True)
    out = sys.__stdout__
    assert out is not None
    for line in sys.stdin:
        command = json.loads(line)
        try:
            apply(command["params"])
            answer: dict[str, Any] = {"status": "success"}
        except Exception as exc:  # noqa: BLE001 - answered, as blender-mcp answers errors
            answer = {"status": "error", "message": str(exc)}
        out.write(json.dumps(answer) + "\n")
        out.flush()


def _call(proc: subprocess.Popen[str], op: dict[str, Any]) -> None:
    stdin: IO[str] | None = proc.stdin
    stdout: IO[str] | None = proc.stdout
    assert stdin is not None and stdout is not None
    stdin.write(json.dumps({"type": op["tool_name"], "params": op}) + "\n")
    stdin.flush()
    answer = json.loads(stdout.readline())
    if answer["status"] != "success":
        raise RuntimeError(f"the peer failed {op['operation_id']}: {answer['message']}")


def peer_latencies(runs: int, objects: int = 20) -> list[float]:
    """Seconds per 25-operation run through the peer loop, after a warm-up run."""
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        for op in setup_plan(objects)["operations"]:
            _call(proc, op)
        seconds = []
        for i in range(runs + 1):  # the first run warms the loop up
            started = time.perf_counter()
            for op in plan25(i)["operations"]:
                _call(proc, op)
            if i:
                seconds.append(time.perf_counter() - started)
        return seconds
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--objects", type=int, default=20)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
        return
    seconds = sorted(peer_latencies(args.runs, args.objects))
    print(f"peer loop, 25 operations, p50: {seconds[len(seconds) // 2] * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
