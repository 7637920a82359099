"""What reading a run of the most operations a plan may hold costs (ADR 0076).

    .venv/bin/python bench/run_view.py [--reads 5]

A mesh in this process (nats-server, real Blender) runs the largest plan a run may hold
(``tests/support/big_plans.py``: 500 operations by default), then reads the run's detail
``--reads`` times through ``services.audit.client.query_run``, which asks the audit
service for it page by page. Printed: the run's time, the whole detail's size against
what one message holds, the size of each page, and the read's median and slowest time.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contracts.queries import RunReply
from services.audit import client as audit
from services.doors.core.client import MeshClient
from services.doors.core.requests import build_request
from services.runtime.service.settings import Settings
from tests.support.big_plans import biggest_plan
from tests.support.meshes import client_mesh

PREFIX = "bmview"


async def main(reads: int) -> None:
    with tempfile.TemporaryDirectory() as home:
        settings = Settings(home=Path(home), prefix=PREFIX, user="ana", previews=False)
        async with client_mesh(settings, "bench-run-view") as (_, bus):
            plan = biggest_plan()
            request = build_request(user="ana", scene_id="aisle", plan=plan, planner="plan")
            started = time.perf_counter()
            result = await MeshClient(bus).run(request, timeout=600)
            ran = time.perf_counter() - started
            assert result.status == "completed", (result.failure, result.message)
            times = []
            for _ in range(reads):
                started = time.perf_counter()
                detail = await audit.query_run(bus.nc, PREFIX, request.run_id)
                times.append((time.perf_counter() - started) * 1000)
            sizes = []
            offset: int | None = 0
            upto = None
            while offset is not None:
                part, page = await audit.query_run_page(
                    bus.nc, PREFIX, request.run_id, offset, upto_seq=upto
                )
                sizes.append(len(msgspec.json.encode(RunReply(ok=True, detail=part, page=page))))
                offset, upto = page.next_offset, page.upto_seq
            whole = len(msgspec.json.encode(RunReply(ok=True, detail=detail)))
            print(f"run of {len(plan['operations'])} operations: {ran:.1f} s")
            print(f"whole detail: {whole:,} bytes; one message holds {bus.nc.max_payload:,}")
            print(f"pages ({page.rows:,} rows): " + ", ".join(f"{s:,}" for s in sizes) + " bytes")
            print(
                f"query_run over {reads} reads: median {statistics.median(times):.0f} ms, "
                f"slowest {max(times):.0f} ms"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reads", type=int, default=5, help="reads of the run's detail")
    asyncio.run(main(parser.parse_args().reads))
