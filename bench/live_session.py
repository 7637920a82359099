"""The artist's open session, live: how soon a run shows, what a push sends, how long the
add-on holds Blender's thread.

    .venv/bin/python bench/live_session.py [--runs 3] [--grid 700] [--props 2000]

Starts ``blendmesh up`` as a user does and a Blender session (the venv's bpy, the add-on
installed from its zip, driven as its timer would be: tests/support/addon_session.py),
then, on a 20-object scene and on ``bench/big_scene.py``'s scene (two ``--grid``² grids
and ``--props`` cubes, 77 MiB saved uncompressed):

- Ask → change in the session: from the Ask button to the end of the timer tick that
  put the run's object in the open session (planning, policy, execution, commit, the
  fetch of its operations with the answer and the replay; Blender draws it at its next
  redraw), p50 of ``--runs``; beside it, the same request run through the gateway alone,
  without the session (the mesh's share), and the time until the add-on is idle again
  (its look at the scene after the run included);
- the bytes a push sends after the artist moved one object by hand since the last push:
  the chunks the mesh lacks, their frames, the question and the manifest (target: 2 MiB
  on the big scene; ADR 0051); beside it, what the push before it sent, after the runs
  replayed since the first push;
- the add-on's longest tick while it follows the scene for 10 s: a frame Blender could
  not draw meanwhile (target: 50 ms), and the longest tick that replayed a run, beside
  what Blender itself takes to add one object by hand on the same scene (its update and
  undo step: on the big scene, relinking its 2,000 objects dominates both).

The bpy session here has no window: the frame gaps of Debian's Blender with its window
are recorded by tests/e2e/test_addon_gui.py.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.big_scene import blender, build
from tests.support.blender_addon import BlenderSession
from tests.support.meshes import blendmesh_up

MIB = 1024 * 1024
TOKEN = "tok-ana"
SMALL = """
import sys, bpy
bpy.ops.wm.read_factory_settings(use_empty=True)
for i in range(20):
    bpy.ops.mesh.primitive_cube_add(size=0.5, location=(i % 5, i // 5, 0))
    bpy.context.object.name = f"Thing{i:02d}"
bpy.ops.wm.save_as_mainfile(filepath=sys.argv[1], compress=False)
"""


async def scene_rows(url: str, blend: Path, scene: str, runs: int, home: Path) -> list[str]:
    session = await BlenderSession.start(home)
    try:
        await session.send(do="prefs", url=url, token=TOKEN)
        await session.send(do="open", path=str(blend), timeout=600)
        await session.send(do="scene", scene=scene)
        pushed = await session.send(do="op", name="push", timeout=900)
        assert pushed["error"] == "" and pushed["synced"], pushed["error"]
        visible, idle, mesh_only, replay_ticks = [], [], [], []
        for n in range(runs):
            start = time.perf_counter()
            asked = await session.send(
                do="op",
                name="ask",
                args={"prompt": f"add a cube named Live{n} at 0 0 4"},
                appear=f"Live{n}",
            )
            idle.append(time.perf_counter() - start)
            visible.append(asked["visibleAfterS"])
            replay_ticks.append(asked["longestTickMs"])
            assert f"Live{n}" in asked["objects"] and asked["error"] == "", asked["error"]
            mesh_only.append(await gateway_alone(url, scene, f"Alone{n}"))
            await session.send(do="synced", rev=asked["synced"]["rev"] + 1, timeout=600)
        hold = await session.send(do="hold", seconds=10)
        # Each push waits for approval (it replaces the head): its bytes are sent by then.
        # The first holds what the runs replayed since the scene's first push changed:
        # the mesh made those revisions, so none of their chunks came from this session.
        before = (await session.send(do="op", name="push", timeout=900))["pushedBytes"]
        await session.send(do="move", name=first_object(pushed["objects"]))
        whole = (await session.send(do="copy_size", timeout=600))["bytes"]
        size = (await session.send(do="op", name="push", timeout=900))["pushedBytes"]
        # The same scene's cost to Blender itself of one object added by hand (Shift+A):
        # a replay that adds one cannot take less.
        by_hand = (await session.send(do="by_hand", name="ByHand"))["by_hand_ms"]
    finally:
        await session.close()
    p50, alone = statistics.median(visible), statistics.median(mesh_only)
    return [
        f"{scene}: ask -> change in the session, p50 of {runs}: {p50:.2f} s "
        f"(the run through the gateway alone: {alone:.2f} s; the session's share "
        f"{p50 - alone:+.2f} s; until the add-on is idle again: "
        f"{statistics.median(idle):.2f} s)",
        f"{scene}: a push after moving one object sends {size / MIB:.2f} MiB of the "
        f"{whole / MIB:.1f} MiB file (the push before it, after {2 * runs} runs were "
        f"replayed since the first: {before / MIB:.2f} MiB)",
        f"{scene}: the add-on's longest tick while following 10 s: {hold['hold_ms']} ms; "
        f"while a run came in and was replayed: {max(replay_ticks)} ms (Blender's own "
        f"for one object added by hand, update and undo step: {by_hand} ms)",
    ]


def first_object(names: list[str]) -> str:
    return next(n for n in names if n.startswith(("Prop_", "Thing")))


async def gateway_alone(url: str, scene: str, name: str) -> float:
    async with httpx.AsyncClient(base_url=url, timeout=600) as http:
        start = time.perf_counter()
        answer = await http.post(
            "/api/agent/run",
            json={"prompt": f"add a cube named {name} at 0 0 5", "sceneId": scene},
            headers={"Authorization": f"Bearer {TOKEN}"},
        )
        assert answer.status_code == 200 and answer.json()["status"] == "completed", answer.text
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--grid", type=int, default=700)
    parser.add_argument("--props", type=int, default=2000)
    parser.add_argument("--skip-big", action="store_true", help="the 20-object scene only")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        small, big = root / "small.blend", root / "big.blend"
        blender(SMALL, str(small))
        scenes = [(small, "live20")]
        if not args.skip_big:
            build(big, args.grid, args.props)
            print(f"big scene: {big.stat().st_size / MIB:.0f} MiB saved uncompressed")
            scenes.append((big, "livebig"))
        env = {
            "BLENDMESH_API_TOKENS": f"{TOKEN}=ana",
            "BLENDMESH_PREVIEWS": "0",
            # The big scene's file is over the default 64 MiB an import may hold, sent
            # whole at the first push or in chunks after.
            "BLENDMESH_MAX_UPLOAD_BYTES": str(256 * MIB),
        }
        with blendmesh_up(root / "mesh", "--port", "0", env=env) as up:
            for blend, scene in scenes:
                rows = asyncio.run(
                    scene_rows(up.gateway_url, blend, scene, args.runs, root / scene)
                )
                for row in rows:
                    print(row, flush=True)


if __name__ == "__main__":
    main()
