"""How the inspection's kept parts (``services/bridge/inspection/inspect_parts.py``) are reused and
forgotten, seen from inside a bridge's own Python (a bpy process of the test's own).

What a description described afresh is counted (``PARTS.described``), so these tests can
tell a reused part from one described again; the tests of
``test_inspect_incremental.py`` check that the result always equals the full one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.bridges import script_result

pytestmark = [pytest.mark.integration, pytest.mark.asyncio, pytest.mark.timeout(180)]

# A bridge server in this process, and a way to call it as the executor does.
PRELUDE = """
import json, logging, sys
logging.basicConfig(level=logging.ERROR)
import bpy, msgspec
from services.bridge import server
from services.bridge.scene import digests
from services.bridge.inspection import inspect, inspect_parts
from services.bridge.tools import scene
PARTS = inspect_parts.PARTS
s = server.Server(sys.stdout)
def rpc(method, **params):
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    answer = s.handle_line(line)
    assert getattr(answer, "error", None) is None, answer
    return answer.result
def tool(called, /, **arguments):
    result = rpc("tools/call", name=called, arguments=arguments)
    assert not result.is_error, result
def same():
    return msgspec.json.encode(inspect.inspect()) == msgspec.json.encode(inspect.inspect(True))
scene.reset()
"""


async def test_inspect_when_one_of_many_objects_moves_describes_only_that_one() -> None:
    script = (
        PRELUDE
        + """
for i in range(60):
    tool("object.create", primitive="cube", name=f"O{i:02d}")
tool("material.assign", object="O00", material="Red", base_color=[1, 0, 0])
tool("modifier.add", object="O01", type="NODES")
inspect.inspect()
first = PARTS.described
inspect.inspect()
again = PARTS.described
tool("object.transform", name="O30", location=[0, 0, 5])
moved = same() and PARTS.described
tool("object.rename", name="O31", new_name="Renamed")
renamed = same() and PARTS.described
print("RESULT", json.dumps([first, again, moved, renamed]))
"""
    )
    counts, _ = await script_result(script)
    # 60 objects, the material and the node group; then nothing; then the one moved (the
    # full description, made second, keeps nothing); then the renamed one.
    assert counts == [62, 0, 1, 1]


async def test_inspect_when_a_file_is_opened_another_way_forgets_every_part(
    tmp_path: Path,
) -> None:
    script = (
        PRELUDE
        + f"""
tool("object.create", primitive="cube", name="A")
inspect.inspect()
kept = len(PARTS.kept)
bpy.ops.wm.save_as_mainfile(filepath={str(tmp_path / "a.blend")!r}, copy=True)
inspect.inspect()
bpy.ops.wm.open_mainfile(filepath={str(tmp_path / "a.blend")!r})  # not scene.load
after_open = (len(PARTS.kept), len(digests.CACHE.entries))
inspect.inspect()
described = PARTS.described
bpy.ops.wm.read_factory_settings(use_empty=True)  # not scene.reset
after_reset = (len(PARTS.kept), len(digests.CACHE.entries))
# An undo step replaces the scene too; a bridge has no undo history to step through.
undo = [digests._replaced in getattr(bpy.app.handlers, e) for e in ("undo_post", "redo_post")]
print("RESULT", json.dumps([kept, after_open, described, after_reset, undo]))
"""
    )
    (kept, after_open, described, after_reset, undo), _ = await script_result(script)
    assert kept == 1
    assert after_open == [0, 0] and described == 1  # described afresh from the file
    assert after_reset == [0, 0]
    assert undo == [True, True]


async def test_inspect_when_a_change_went_unseen_is_full_again_after_the_save(
    tmp_path: Path,
) -> None:
    # Hiding an object in the viewport leaves the depsgraph unreported (ADR 0012): done
    # behind the tools' back, no digest is dropped. The save's full hash finds that out.
    script = (
        PRELUDE
        + f"""
tool("object.create", primitive="cube", name="A")
tool("object.create", primitive="cube", name="B")
rpc("blendmesh/scene.save", path={str(tmp_path / "first.blend")!r})
inspect.inspect()
bpy.data.objects["A"].hide_viewport = True
before_save = same()
rpc("blendmesh/scene.save", path={str(tmp_path / "second.blend")!r})
kept = dict((o.name, o.hide_viewport) for o in inspect.inspect().objects)
print("RESULT", json.dumps([before_save, kept, same()]))
"""
    )
    (before_save, kept, after), output = await script_result(script)
    assert before_save is False  # the unseen change: the reused part is stale
    assert "digest cache was stale" in output, output[-2000:]
    assert kept == {"A": True, "B": False} and after is True


async def test_fingerprint_when_an_object_goes_undeclared_combines_the_hash_again() -> None:
    script = (
        PRELUDE
        + """
tool("object.create", primitive="cube", name="A")
tool("object.create", primitive="cube", name="B")
first = rpc("blendmesh/scene.fingerprint").hash
repeated = rpc("blendmesh/scene.fingerprint").hash
bpy.data.objects.remove(bpy.data.objects["B"])  # no tool declared it
gone = rpc("blendmesh/scene.fingerprint").hash
full = rpc("blendmesh/scene.fingerprint_full").hash
print("RESULT", json.dumps([first, repeated, gone, full]))
"""
    )
    (first, repeated, gone, full), _ = await script_result(script)
    assert first == repeated
    assert gone == full != first
