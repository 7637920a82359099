"""What a download costs in each format: the bridge's export time and the file's size.

    .venv/bin/python bench/exports.py [--repeat 3]

One bridge (a real Blender) builds a scene with the typed tools: a subdivided monkey, an
extruded and bevelled text, a bevelled circle curve and a rig bound to a cube, lit by a
packed HDRI. Each format is exported ``--repeat`` times through ``blendmesh/scene.export``
into a temporary folder, as the executor asks it; the figure is the median time and the
file's size. The bridge's first export of a format loads its exporter, so the first of
each is printed apart.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contracts.exports import FORMATS, ExportParams
from services.executor.adapters.bridge_client import BridgeProcess

SCENE = [
    ("object.create", {"primitive": "monkey", "name": "Head"}),
    ("modifier.add", {"object": "Head", "type": "SUBSURF", "properties": {"levels": 2}}),
    ("text.create", {"body": "blendmesh", "name": "Sign", "extrude": 0.1, "bevel_depth": 0.02}),
    ("curve.create", {"kind": "circle", "name": "Ring", "radius": 2, "bevel_depth": 0.05}),
    ("armature.create", {"name": "Rig"}),
    ("object.create", {"primitive": "cube", "name": "Body", "location": [3, 0, 0.5]}),
    ("armature.bind", {"object": "Body", "armature": "Rig"}),
    ("world.hdri", {"hdri": "forest"}),
]


async def main(repeat: int) -> None:
    bridge = BridgeProcess()
    await bridge.start()
    try:
        for n, (tool, args) in enumerate(SCENE):
            result = await bridge.call_tool(tool, args, mcp_call_id=f"bench-{n}")
            assert result.ok, (tool, result.message)
        with tempfile.TemporaryDirectory() as folder:
            print(f"{'format':<6} {'first ms':>9} {'median ms':>10} {'bytes':>10}")
            for fmt, (ending, _) in sorted(FORMATS.items()):
                times = []
                size = 0
                for i in range(repeat + 1):
                    path = str(Path(folder) / f"scene-{i}{ending}")
                    started = time.perf_counter()
                    written = await bridge.export_scene(
                        ExportParams(path=path, format=fmt, max_bytes=1 << 30)  # type: ignore[arg-type]
                    )
                    times.append((time.perf_counter() - started) * 1000)
                    size = written.bytes
                first, rest = times[0], times[1:]
                print(f"{fmt:<6} {first:>9.0f} {statistics.median(rest):>10.0f} {size:>10,}")
    finally:
        await bridge.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="timed exports per format")
    asyncio.run(main(parser.parse_args().repeat))
