"""A production-sized scene end to end: the rows of issue 24's table, from one run.

    .venv/bin/python bench/big_scene.py [--edits 3] [--grid 700] [--props 2000]

Builds the scene with bpy in a child process (two ``--grid``² = 490,000-face grids without
UVs and ``--props`` cubes: 77 MiB uncompressed, 22 MiB as Blender compresses it), then on
one warm embedded mesh: imports it, moves one prop ``--edits`` times, restarts the mesh
(a fresh executor and Blender, which load the head from the store) and moves it again.
Bytes stored are what the scene store and the chunk store streams grew by. A second child
process measures Blender's save options for chunk stability: the bytes of new chunks after
moving one object, saved from the same session and after a reload, compressed or not.

Rows are a list of ``Row``; each measurement appends its own, so another measurement
joins the table by adding a function that returns rows.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from nats.js.errors import NotFoundError
from plan25 import op

from services.doors.cli.mesh import Mesh
from services.doors.core.client import MeshClient, build_request
from services.doors.core.scene_client import SceneDoor
from services.executor.domain.chunking import cut
from services.runtime.host import Bus
from services.runtime.settings import Settings

MIB = 1024 * 1024
BUILD = textwrap.dedent(
    """
    import sys, bpy
    out, grid, props = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    bpy.ops.wm.read_factory_settings(use_empty=True)
    for i in range(2):
        bpy.ops.mesh.primitive_grid_add(
            x_subdivisions=grid, y_subdivisions=grid, size=10, location=(i * 12, 0, 0),
            calc_uvs=False)
        bpy.context.object.name = f"Grid{i}"
    bpy.ops.mesh.primitive_cube_add(size=0.5)
    base = bpy.context.object
    for j in range(props):
        ob = bpy.data.objects.new(f"Prop_{j:04d}", base.data.copy())
        ob.location = (j % 50, j // 50, 2.0)
        bpy.context.scene.collection.objects.link(ob)
    bpy.data.objects.remove(base)
    faces = sum(len(o.data.polygons) for o in bpy.data.objects if o.name.startswith("Grid"))
    bpy.ops.wm.save_as_mainfile(filepath=out, compress=False)
    print(faces)
    """
)
# Save the built scene A, move one prop and save B (same session); reload A in a fresh
# session, move the prop and save C; both with and without compression.
SAVES = textwrap.dedent(
    """
    import sys, bpy
    src, work, compress = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
    def save(name):
        bpy.ops.wm.save_as_mainfile(filepath=f"{work}/{name}", copy=True, compress=compress)
    bpy.ops.wm.open_mainfile(filepath=src)
    save("a.blend")
    bpy.data.objects["Prop_0001"].location.x += 1.5
    save("b.blend")
    bpy.ops.wm.open_mainfile(filepath=f"{work}/a.blend")
    bpy.data.objects["Prop_0001"].location.x += 1.5
    save("c.blend")
    """
)


@dataclass(frozen=True)
class Row:
    name: str
    measured: str
    target: str


def blender(script: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"bpy child failed:\n{done.stderr[-2000:]}")
    return done.stdout


def build(path: Path, grid: int, props: int) -> int:
    """Write the scene; returns the grids' face count."""
    return int(blender(BUILD, str(path), str(grid), str(props)).split()[-1])


def new_bytes(old: Path, new: Path) -> int:
    """Bytes of the chunks of ``new`` that ``old`` lacks: what a commit would upload."""
    before = set(cut(old.read_bytes(), "").chunks)
    return sum(len(b) for d, b in cut(new.read_bytes(), "").chunks.items() if d not in before)


def save_options(scene: Path, work: Path) -> list[Row]:
    rows = []
    for compress in (False, True):
        folder = work / f"saves-{int(compress)}"
        folder.mkdir()
        blender(SAVES, str(scene), str(folder), "1" if compress else "0")
        a = folder / "a.blend"
        kind = "compressed" if compress else "uncompressed"
        size = a.stat().st_size / MIB
        for name, label in (("b.blend", "same session"), ("c.blend", "after a reload")):
            changed = new_bytes(a, folder / name) / MIB
            name = f"new chunk bytes, one object moved, {kind} save ({size:.1f} MiB), {label}"
            rows.append(Row(name, f"{changed:.2f} MiB", "-"))
    return rows


async def stored_bytes(bus: Bus) -> int:
    total = 0
    for store in ("scenes", "chunks"):
        try:
            info = await bus.js.stream_info(f"OBJ_{bus.prefix}_{store}")
        except NotFoundError:  # a mesh from before the chunk store: it holds nothing
            continue
        total += info.state.bytes
    return total


def move(i: int) -> dict[str, Any]:
    moved = op("m", "object.transform", {"name": "Prop_0001", "location": [1.0 + i, 0.5, 2.0]})
    return {"request_id": f"move-{i}-{time.time_ns()}", "operations": [moved]}


async def edit(client: MeshClient, bus: Bus, i: int) -> tuple[float, int]:
    """Wall time and bytes stored of one one-operation run."""
    before = await stored_bytes(bus)
    request = build_request(user="bench", scene_id="big", plan=move(i))
    started = time.perf_counter()
    result = await client.run(request)
    seconds = time.perf_counter() - started
    assert result.status == "completed", result.message
    return seconds, await stored_bytes(bus) - before


async def mesh_rows(scene: Path, faces: int, edits: int) -> list[Row]:
    data = await asyncio.to_thread(scene.read_bytes)
    with tempfile.TemporaryDirectory(prefix="blendmesh-big-") as home:
        big = 1024 * MIB
        settings = Settings(home=Path(home), prefix="bench", user="bench", max_upload_bytes=big)
        async with Mesh(settings) as mesh:
            bus = await Bus.open(mesh.url, settings.prefix, "bench", mesh.login("client"))
            client = MeshClient(bus)
            started = time.perf_counter()
            request = await SceneDoor(bus, settings).import_request(
                "bench", "big", data, scene.name, pre_approved=True
            )
            result = await client.run(request)
            imported = time.perf_counter() - started
            assert result.status == "completed", result.message
            warm = [await edit(client, bus, i) for i in range(edits)]
            await bus.close()
        async with Mesh(settings) as mesh:  # a new executor and Blender, the same store
            bus = await Bus.open(mesh.url, settings.prefix, "bench", mesh.login("client"))
            restarted = await edit(MeshClient(bus), bus, edits)
            await bus.close()
    per_edit = statistics.median(b for _, b in warm) / MIB
    edit_s = statistics.median(s for s, _ in warm)
    size = f"{len(data) / MIB:.0f} MiB file ({faces:,} grid faces)"
    return [
        Row(f"import of the {size}, in-process client", f"{imported:.2f} s", "<= 3 s"),
        Row("one-operation edit (move one prop), in-process client, p50", f"{edit_s:.2f} s", "-"),
        Row(
            f"bytes stored per one-operation edit (p50 of {edits})",
            f"{per_edit:.2f} MiB",
            "<= 1 MiB",
        ),
        Row(
            "bytes stored by the first edit after an executor restart",
            f"{restarted[1] / MIB:.2f} MiB",
            "<= 4 MiB",
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--edits", type=int, default=3, help="edits on the warm mesh")
    parser.add_argument("--grid", type=int, default=700, help="subdivisions of each grid")
    parser.add_argument("--props", type=int, default=2000, help="small objects")
    parser.add_argument("--skip-saves", action="store_true", help="no save-option rows")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="blendmesh-big-scene-") as work:
        scene = Path(work) / "big.blend"
        faces = build(scene, args.grid, args.props)
        rows = asyncio.run(mesh_rows(scene, faces, args.edits))
        if not args.skip_saves:
            rows += save_options(scene, Path(work))
    print("| | measured | target |")
    print("|---|---|---|")
    for row in rows:
        print(f"| {row.name} | {row.measured} | {row.target} |")


if __name__ == "__main__":
    main()
