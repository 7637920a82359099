"""A trusted PYTHON step against the wall between users, on a real bridge and bubblewrap.

A trusted step is plain Python with real bpy: it can reach the protocol the sandboxed
Blender answers the bridge on, claim it saved a scene, stay alive and then change its own
working folder while the bridge takes the result. Each test is an attack a hostile user
would try first; docs/python-steps.md says what a step can and cannot do.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
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


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                kids = [int(k) for k in (task / "children").read_text().split()]
            except OSError:
                continue
            found += kids
            todo += kids
    return found


def _gone(pid: int) -> bool:
    return not os.path.exists(f"/proc/{pid}")


def _holding(pids: list[int], name: str) -> int | None:
    """The first of ``pids`` with an open file whose path (as it sees it) is ``name``."""
    for pid in pids:
        for fd in Path(f"/proc/{pid}/fd").glob("*"):
            try:
                if os.readlink(fd) == name:
                    return pid
            except OSError:
                continue
    return None


async def test_files_a_step_wrote_are_gone_after_its_bridge_is_killed(tmp_path: Path) -> None:
    bridge_tmp = tmp_path / "bridge-tmp"
    bridge_tmp.mkdir()
    process = BridgeProcess(env={**os.environ, "TMPDIR": str(bridge_tmp)})
    await process.start()
    code = (
        "import time\nf = open('/sandbox/junk', 'wb')\nf.write(b'x' * 64 * 1024 * 1024)\n"
        "f.flush()\ng = open('/tmp/junk', 'wb')\ng.write(b'y' * 32 * 1024 * 1024)\n"
        "g.flush()\ntime.sleep(60)\n"
    )
    bridge_pid = process.pid
    assert bridge_pid is not None
    running = asyncio.create_task(
        call(process, "python.trusted", code=code, code_sha256=code_sha256(code))
    )
    try:
        step = None
        for _ in range(600):  # until the step holds its files open (at most 60 s)
            step = _holding(_descendants(bridge_pid), "/tmp/junk")
            if step is not None:
                break
            await asyncio.sleep(0.1)
        assert step is not None, "the step never wrote its files"
        os.kill(bridge_pid, signal.SIGKILL)
        for _ in range(100):  # the sandbox dies with its bridge
            if _gone(step):
                break
            await asyncio.sleep(0.1)
        assert _gone(step), "the sandbox outlived its bridge"
    finally:
        running.cancel()
        with contextlib.suppress(BaseException):
            await running
        with contextlib.suppress(BaseException):
            await process.close()
    left = [p for p in bridge_tmp.rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in left) < 1024 * 1024, left
