"""The bridge freezes its heap once a scene is loaded and after a commit's check, so the
cyclic garbage collector stops walking the scene's caches; a load or a reset unfreezes and
collects first, so the cycles the old scene left are freed, not frozen for good."""

from __future__ import annotations

import pytest

from tests.support.bridges import SERVER_PRELUDE, script_result

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

SCRIPT = (
    SERVER_PRELUDE
    + """
import gc, weakref
rpc = answer
class Node:
    pass
def cycle():
    node = Node()
    node.me = node  # only the cyclic collector frees it
    return weakref.ref(node)
found = {}
rpc("tools/call", name="object.create", arguments={"primitive": "cube", "name": "A"})
found["after_tool"] = gc.get_freeze_count()
rpc("blendmesh/scene.save", path=sys.argv[1], checked=False)
left = cycle()
rpc("blendmesh/scene.verify")
found["after_verify"] = gc.get_freeze_count()
found["cycle_frozen"] = left() is not None
gc.collect()
found["cycle_kept_by_freeze"] = left() is not None
rpc("blendmesh/scene.load", path=sys.argv[1])
found["cycle_freed_by_load"] = left() is None
found["after_load"] = gc.get_freeze_count()
found["answers"] = rpc("blendmesh/scene.fingerprint").result.hash != ""
print("RESULT", json.dumps(found))
"""
)


async def test_heap_when_verified_or_loaded_is_frozen_and_a_load_frees_the_old_cycles(
    tmp_path: object,
) -> None:
    script = SCRIPT.replace("sys.argv[1]", repr(str(tmp_path) + "/h.blend"))
    found, _ = await script_result(script)
    assert found["after_tool"] == 0, found  # nothing frozen before a scene settles
    assert found["after_verify"] > 0 and found["cycle_frozen"], found
    assert found["cycle_kept_by_freeze"], found  # frozen: a pass does not see it
    assert found["cycle_freed_by_load"], found  # the load unfroze and collected it
    assert found["after_load"] > 0 and found["answers"], found
