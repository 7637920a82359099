"""A trusted PYTHON step against the wall between users, on a real bridge and bubblewrap.

A trusted step is plain Python with real bpy: it can reach the protocol the sandboxed
Blender answers the bridge on, claim it saved a scene, stay alive and then change its own
working folder while the bridge takes the result. Each test is an attack a hostile user
would try first; docs/python-steps.md says what a step can and cannot do.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from contracts.python_steps import code_sha256
from services.executor.adapters.bridge_client import BridgeProcess
from tests.support.bridges import bridge_fixtures, call, ok

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(300),
]

shared_bridge, bridge = bridge_fixtures()
TRIES = 12  # steps, each flipping its output between a file and a link hundreds of times

# Says "saved, changed" for itself, then keeps swapping /sandbox/out.blend between a real
# scene and a symlink to another user's scene, for as long as it lives.
SWAP = """
import os, sys, threading, time, bpy
child = sys.modules["__main__"]
bpy.ops.wm.save_as_mainfile(filepath="/sandbox/real.blend", copy=True)
flips = [0]
def swap():
    while True:
        try:
            for tmp in ("/sandbox/f.tmp", "/sandbox/l.tmp"):
                if os.path.lexists(tmp):
                    os.unlink(tmp)
            os.link("/sandbox/real.blend", "/sandbox/f.tmp")
            os.replace("/sandbox/f.tmp", "/sandbox/out.blend")
            os.symlink(VICTIM, "/sandbox/l.tmp")
            os.replace("/sandbox/l.tmp", "/sandbox/out.blend")
            flips[0] += 1
        except OSError:
            pass
threading.Thread(target=swap, daemon=True).start()
while flips[0] < 50:
    time.sleep(0.0005)
child.answer({"ran": True})
child.answer({"ok": True, "output": "", "wrote": True})
time.sleep(20)
"""


async def object_names(bridge: BridgeProcess) -> set[str]:
    data = (await ok(bridge, "scene.snapshot")).data
    assert data is not None
    return {o["name"] for o in data["objects"]}


async def test_trusted_step_swapping_its_output_for_a_link_never_hands_over_another_scene(
    bridge: BridgeProcess, tmp_path: Path
) -> None:
    victim = tmp_path / "scenes" / "bob.blend"
    victim.parent.mkdir()
    await ok(bridge, "object.create", primitive="cube", name="BobSecret")
    await bridge.save(str(victim))
    code = f"VICTIM = {str(victim)!r}\n" + SWAP
    for _ in range(TRIES):
        await bridge.reset()
        await ok(bridge, "object.create", primitive="plane", name="Plane")
        result = await call(bridge, "python.trusted", code=code, code_sha256=code_sha256(code))
        names = await object_names(bridge)
        assert "BobSecret" not in names, f"another user's scene was handed over: {result}"
