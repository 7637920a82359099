"""Small edits on a big scene with two executors, warm holds on and off (ADR 0037).

    .venv/bin/python bench/warm_scenes.py [--edits 6] [--grid 700] [--props 2000]

Builds the scene of bench/big_scene.py, then for ``BLENDMESH_WARM_HOLD`` 60 and 0: an
embedded mesh with two executors (previews off) imports it and moves one prop
``--edits`` times. Printed per setting: the p50 and slowest edit's wall time, and how
often an executor loaded the scene into its Blender from a file (the imports' own load
not counted) as the executors log it.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from big_scene import MIB, build, move

from services.doors.cli.mesh import Mesh
from services.doors.core.client import MeshClient
from services.doors.core.requests import build_request
from services.doors.core.scene_client import SceneDoor
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings


class Loads(logging.Handler):
    """Counts the executors' loads of a scene revision into Blender."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("loaded revision"):
            self.count += 1


async def edits(scene: Path, warm_hold: float, count: int) -> tuple[list[float], int]:
    """Seconds of each edit, and the loads they caused."""
    data = await asyncio.to_thread(scene.read_bytes)
    loads = Loads()
    logger = logging.getLogger("blendmesh.executor")
    logger.setLevel(logging.INFO)  # the loads are logged at INFO
    logger.addHandler(loads)
    try:
        with tempfile.TemporaryDirectory(prefix="blendmesh-warm-") as home:
            settings = Settings(
                home=Path(home),
                prefix="bench",
                user="bench",
                executors=2,
                previews=False,
                warm_hold=warm_hold,
                max_upload_bytes=1024 * MIB,
            )
            async with Mesh(settings) as mesh:
                bus = await Bus.open(mesh.url, settings.prefix, "bench", mesh.login("client"))
                client = MeshClient(bus)
                request = await SceneDoor(bus, settings).import_request(
                    "bench", "big", data, scene.name, pre_approved=True
                )
                assert (await client.run(request)).status == "completed"
                loads.count = 0
                seconds = []
                for i in range(count):
                    plan = move(i)
                    started = time.perf_counter()
                    result = await client.run(
                        build_request(user="bench", scene_id="big", plan=plan)
                    )
                    seconds.append(time.perf_counter() - started)
                    assert result.status == "completed", result.message
                await bus.close()
    finally:
        logger.removeHandler(loads)
    return seconds, loads.count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--edits", type=int, default=6, help="edits per setting")
    parser.add_argument("--grid", type=int, default=700, help="subdivisions of each grid")
    parser.add_argument("--props", type=int, default=2000, help="small objects")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="blendmesh-warm-scene-") as work:
        scene = Path(work) / "big.blend"
        faces = build(scene, args.grid, args.props)
        size = scene.stat().st_size / MIB
        print(f"scene: {size:.0f} MiB file, {faces:,} grid faces, {args.props} props")
        print("| BLENDMESH_WARM_HOLD | edit p50 | slowest edit | loads into Blender |")
        print("|---|---|---|---|")
        for warm_hold in (60.0, 0.0):
            seconds, loads = asyncio.run(edits(scene, warm_hold, args.edits))
            p50 = statistics.median(seconds)
            print(
                f"| {warm_hold:g} | {p50:.2f} s | {max(seconds):.2f} s | {loads} of {args.edits} |"
            )


if __name__ == "__main__":
    main()
