"""A commit right after a load hashes the scene once (ADR 0032): every digest was computed
from the file as loaded, so the save returns the cached hash, which is the full one. After
any request that may change the scene, the save still recomputes the full hash and catches
a digest a wrong declaration left stale (ADR 0012)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.bridges import SERVER_PRELUDE, script_result

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

PRELUDE = """
import dataclasses
from services.bridge.scene import digests
def rpc(method, **params):
    return answer(method, **params).result
full_hashes = []
original = digests.full_hash
def counted():
    full_hashes.append(1)
    return original()
digests.full_hash = counted
for name in ("A", "B"):
    rpc("tools/call", name="object.create", arguments={{"primitive": "cube", "name": name}})
rpc("blendmesh/scene.save", path={first!r})
loaded = rpc("blendmesh/scene.load", path={first!r}).hash
"""


async def test_save_right_after_a_load_returns_the_full_hash_computed_once(
    tmp_path: Path,
) -> None:
    script = (
        SERVER_PRELUDE
        + PRELUDE.format(first=str(tmp_path / "first.blend"))
        + f"""
full_hashes.clear()
saved = rpc("blendmesh/scene.save", path={str(tmp_path / "c.blend")!r}).hash
counted_saves = len(full_hashes)
full = rpc("blendmesh/scene.fingerprint_full").hash
print("RESULT", json.dumps({{"loaded": loaded, "saved": saved, "full": full,
      "full_hashes_in_save": counted_saves}}))
"""
    )
    found, _ = await script_result(script)
    assert found["saved"] == found["full"] == found["loaded"]
    assert found["full_hashes_in_save"] == 0


@pytest.mark.parametrize(
    "between",
    [
        'rpc("tools/call", name="object.transform", '
        'arguments={"name": "A", "location": [1, 2, 3]})',
        'rpc("tools/call", name="scene.snapshot", arguments={})',
        'rpc("blendmesh/scene.render_preview", path=PNG, width=16, height=16)',
    ],
)
async def test_save_after_a_request_that_may_change_the_scene_catches_a_stale_digest(
    tmp_path: Path, between: str
) -> None:
    # A wrong declaration would leave a digest that no longer matches its datablock: the
    # test plants one after the request, as if the request had changed A undeclared.
    script = (
        SERVER_PRELUDE
        + PRELUDE.format(first=str(tmp_path / "first.blend"))
        + f"""
PNG = {str(tmp_path / "p.png")!r}
{between}
# Saving evaluates the depsgraph, whose updates drop digests too: let it settle first.
rpc("blendmesh/scene.save", path={str(tmp_path / "settle.blend")!r})
rpc("blendmesh/scene.fingerprint")
key = ("object", "A")
digests.CACHE.entries[key] = dataclasses.replace(digests.CACHE.entries[key], digest="0" * 64)
stale = rpc("blendmesh/scene.fingerprint").hash
full = rpc("blendmesh/scene.fingerprint_full").hash
saved = rpc("blendmesh/scene.save", path={str(tmp_path / "c.blend")!r}).hash
print("RESULT", json.dumps({{"stale": stale, "full": full, "saved": saved}}))
"""
    )
    found, output = await script_result(script)
    assert found["saved"] == found["full"] != found["stale"]
    assert "digest cache was stale" in output, output[-2000:]


async def test_unchecked_save_returns_the_cache_hash_and_verify_catches_the_stale_digest(
    tmp_path: Path,
) -> None:
    # A commit saves unchecked and asks ``scene.verify`` while it stores the file
    # (ADR 0038): the save must not pay for the full hash, and the verify must see what a
    # checked save saw, and rebuild the cache.
    script = (
        SERVER_PRELUDE
        + PRELUDE.format(first=str(tmp_path / "first.blend"))
        + f"""
rpc("tools/call", name="object.transform", arguments={{"name": "A", "location": [1, 2, 3]}})
rpc("blendmesh/scene.save", path={str(tmp_path / "settle.blend")!r})
rpc("blendmesh/scene.fingerprint")
key = ("object", "A")
digests.CACHE.entries[key] = dataclasses.replace(digests.CACHE.entries[key], digest="0" * 64)
stale = rpc("blendmesh/scene.fingerprint").hash
full_hashes.clear()
saved = rpc("blendmesh/scene.save", path={str(tmp_path / "c.blend")!r}, checked=False).hash
in_save = len(full_hashes)
verified = rpc("blendmesh/scene.verify").hash
in_verify = len(full_hashes) - in_save
after = rpc("blendmesh/scene.fingerprint").hash
full = rpc("blendmesh/scene.fingerprint_full").hash
print("RESULT", json.dumps({{"stale": stale, "saved": saved, "verified": verified,
      "after": after, "full": full, "in_save": in_save, "in_verify": in_verify}}))
"""
    )
    found, output = await script_result(script)
    assert found["saved"] == found["stale"] != found["verified"]
    assert found["verified"] == found["full"] == found["after"]  # the cache was rebuilt
    assert (found["in_save"], found["in_verify"]) == (0, 1)
    assert "digest cache was stale" in output, output[-2000:]


async def test_load_of_many_objects_in_several_collections_hashes_as_the_full_hash(
    tmp_path: Path,
) -> None:
    # Past INDEX_FROM objects hashed from nothing, their collections come from one index
    # (scene_state.membership): it must give what asking each object gives.
    script = (
        SERVER_PRELUDE
        + f"""
import bpy
from services.bridge.scene import digests
def rpc(method, **params):
    return answer(method, **params).result
props, trees = bpy.data.collections.new("Props"), bpy.data.collections.new("Trees")
bpy.context.scene.collection.children.link(props)
props.children.link(trees)
for i in range(3 * digests.INDEX_FROM):
    ob = bpy.data.objects.new(f"O{{i:03d}}", bpy.data.meshes.new(f"M{{i:03d}}"))
    for home in ([props], [props, trees], [bpy.context.scene.collection, trees])[i % 3]:
        home.objects.link(ob)
path = {str(tmp_path / "many.blend")!r}
rpc("blendmesh/scene.save", path=path)
before = rpc("blendmesh/scene.fingerprint_full").hash
loaded = rpc("blendmesh/scene.load", path=path).hash
full = rpc("blendmesh/scene.fingerprint_full").hash
print("RESULT", json.dumps({{"before": before, "loaded": loaded, "full": full}}))
"""
    )
    found, _ = await script_result(script)
    assert found["loaded"] == found["full"] == found["before"]
