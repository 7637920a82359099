"""How much of what an artist types the offline (rules) planner understands and gets right.

    .venv/bin/python bench/grammar.py [--show]

Over the artist requests of tests/fixtures/artist_requests.py, each typed against its own
small starting scene: "understood" is the share the planner turns into exactly the
expected operations; "executed correctly" is the share whose plan, run on real bpy through
a real bridge (the scene built first, the planner given its real summary), leaves the
scene as the request says. Then the fresh sets (bench/grammar_fresh*.txt, requests written
by people who had not read the grammar, each one thread on one scene; bench/grammar_thread.py):
"right on the first try" is the share planned to what its line expects and run without a
failed operation. ``--show`` lists the requests that miss. ``--sample N`` reads only the
first N requests of each list: a quick check that the bench still runs, not a figure.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.grammar_thread import FRESH_SETS, first_tries, load
from services.executor.adapters.bridge_client import BridgeProcess
from services.planner.rules.parse import UnreadableRequest, plan_request
from tests.fixtures.artist_requests import REQUESTS, Request
from tests.support.artist_scene import build_calls, catalog, mismatches, summary, view

CATALOG = catalog()


def understood(request: Request) -> bool:
    try:
        ops = plan_request(request.text, "bench", CATALOG, None, summary(request.scene))
    except UnreadableRequest:
        return False
    return [(op.tool_name, op.args) for op in ops.operations] == request.ops


async def executed(bridge: BridgeProcess, request: Request) -> bool:
    await bridge.reset()
    for tool, args in build_calls(request.scene):
        result = await bridge.call_tool(tool, args, mcp_call_id="bench-build")
        if not result.ok:
            raise RuntimeError(f"cannot build the scene of {request.text!r}: {result.message}")
    try:
        ops = plan_request(request.text, "bench", CATALOG, None, await bridge.summary("s"))
    except UnreadableRequest:
        return False
    for op in ops.operations:
        if not (await bridge.call_tool(op.tool_name, op.args, mcp_call_id="bench-op")).ok:
            return False
    after = await bridge.call_tool("scene.snapshot", {}, mcp_call_id="bench-after")
    return not mismatches(request, view(after.data))


async def main(show: bool, sample: int | None) -> None:
    started = time.perf_counter()
    requests = REQUESTS[:sample]
    read = [understood(r) for r in requests]
    bridge = BridgeProcess()
    await bridge.start()
    try:
        right = [await executed(bridge, r) for r in requests]
        fresh = [await first_tries(bridge, CATALOG, load(path)[:sample]) for path in FRESH_SETS]
    finally:
        await bridge.close()
    total = len(requests)
    print(f"artist requests: {total} (tests/fixtures/artist_requests.py)")
    print(f"understood: {sum(read) / total:.1%} ({sum(read)}/{total})")
    print(f"executed correctly: {sum(right) / total:.1%} ({sum(right)}/{total})")
    for path, results in zip(FRESH_SETS, fresh, strict=True):
        good = sum(ok for _, ok, _ in results)
        print(f"fresh requests: {len(results)} (bench/{path.name}, one thread)")
        print(f"right on the first try: {good / len(results):.1%} ({good}/{len(results)})")
    print(f"took {time.perf_counter() - started:.1f} s")
    if show:
        for request, was_read, was_right in zip(requests, read, right, strict=True):
            if not (was_read and was_right):
                print(f"  missed ({'read' if was_read else 'not read'}): {request.text}")
        for fresh_request, ok, what in (r for results in fresh for r in results):
            if not ok:
                print(f"  fresh missed: {fresh_request.text}\n    {what.splitlines()[0][:200]}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", action="store_true", help="list the requests missed")
    parser.add_argument("--sample", type=int, help="only the first N requests of each list")
    args = parser.parse_args()
    if args.sample is not None and args.sample < 1:
        parser.error(f"--sample {args.sample}: give at least 1 request")
    asyncio.run(main(args.show, args.sample))
