"""What a change list costs: two 1000-object inspection artifacts (each object with two
modifiers and their settings), one revision changing a tenth of the objects; the diff
against decoding the two artifacts it is computed from, which every change list reads.

    .venv/bin/python bench/change_list.py
"""

from __future__ import annotations

import time
from collections.abc import Callable

import msgspec

from contracts import inspection
from contracts.diff import diff
from contracts.inspection import InspectedModifier, InspectedObject, Inspection

OBJECTS = 1000
REPEATS = 20


def scene(revision: int, moved: int) -> bytes:
    settings = {f"setting_{k}": k * 0.5 for k in range(20)}
    objects = [
        InspectedObject(
            name=f"Prop{i:04d}",
            type="MESH",
            location=[float(i), 0.0, 1.0 if i < moved else 0.0],
            data=f"Mesh{i:04d}",
            modifiers=[
                InspectedModifier(name="Bevel", type="BEVEL", properties=settings),
                InspectedModifier(name="Array", type="ARRAY", properties=settings),
            ],
        )
        for i in range(OBJECTS)
    ]
    document = Inspection(
        scene_id="bench",
        revision=revision,
        scene_hash="h",
        blender_version="5.0.0",
        objects=objects,
    )
    return inspection.encode(document)


def best(work: Callable[[], object]) -> float:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    before_bytes, after_bytes = scene(1, 0), scene(2, OBJECTS // 10)
    before, after = inspection.decode(before_bytes), inspection.decode(after_bytes)
    decoding = best(lambda: (inspection.decode(before_bytes), inspection.decode(after_bytes)))
    listing = best(lambda: diff(before, after))
    listed = diff(before, after)
    size = len(msgspec.json.encode(listed))
    print(
        f"{OBJECTS} objects, {len(listed.changes)} changed, artifacts {len(after_bytes)} bytes each"
    )
    print(f"decode both artifacts: {decoding * 1000:.2f} ms")
    print(
        f"diff:                  {listing * 1000:.2f} ms ({listing / decoding:.1f}x the decoding)"
    )
    print(f"change list:           {size} bytes of JSON")


if __name__ == "__main__":
    main()
