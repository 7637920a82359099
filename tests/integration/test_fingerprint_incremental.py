"""The cached scene hash always equals the one recomputed in full (ADR 0012).

Random sequences of tool calls run on a real bridge; after each call the incremental
fingerprint (``blendmesh/scene.fingerprint``) must equal ``blendmesh/scene.fingerprint_full``,
the scene hash the call's result carries must equal both, and the ``scene.snapshot`` tool
(assembled from the cache) must equal ``blendmesh/scene.snapshot_full`` exactly. Calls
that fail (a name that is not there) are part of the sequences on purpose.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contracts.bridge import Fingerprint, FullSnapshot
from services.executor.adapters.bridge_client import BridgeError, BridgeProcess
from services.executor.domain.session import hashes_to
from tests.support.bridges import SERVER_PRELUDE, bridge_fixtures, call, ok, script_result

pytestmark = [
    pytest.mark.integration,
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.timeout(300),
]

shared_bridge, bridge = bridge_fixtures()

NAMES = ("A", "B", "C")
names = st.sampled_from(NAMES)
unit = st.floats(0, 1).map(lambda v: round(v, 2))
coords = st.lists(st.integers(-5, 5).map(float), min_size=3, max_size=3)
GN = {"modifier": "GN"}


def step(tool: str, **args: st.SearchStrategy[Any]) -> st.SearchStrategy[tuple[str, Any]]:
    return st.tuples(st.just(tool), st.fixed_dictionaries(args))


STEPS = st.one_of(
    step("object.create", name=names, primitive=st.sampled_from(["cube", "plane", "monkey"])),
    step("object.transform", name=names, location=coords),
    step("object.rename", name=names, new_name=names),
    step("object.delete", name=names),
    step("object.duplicate", name=names, new_name=names, linked=st.booleans()),
    step("object.parent", child=names, parent=names),
    step("object.unparent", name=names),
    step("object.shade", name=names, smooth=st.booleans()),
    step("object.visibility", name=names, viewport=st.booleans()),
    step("modifier.add", object=names, type=st.just("BEVEL")),
    step("modifier.add", object=names, type=st.just("MIRROR"), properties=names.map(
        lambda n: {"mirror_object": n}
    )),
    step("modifier.set", object=names, name=st.just("Bevel"), properties=unit.map(
        lambda w: {"width": w}
    )),
    step("modifier.remove", object=names, name=st.sampled_from(["Bevel", "Mirror"])),
    step("modifier.apply", object=names, modifier=st.just("Bevel")),
    step("material.assign", object=names, material=st.sampled_from(["M1", "M2"]),
         roughness=unit),
    step("camera.create", name=st.just("Cam"), look_at_object=names),
    step("camera.set", name=st.just("Cam"), lens=st.integers(20, 80).map(float)),
    step("light.create", name=st.just("Lamp"), kind=st.sampled_from(["POINT", "SUN"])),
    step("light.set", name=st.just("Lamp"), power=st.integers(1, 900).map(float)),
    step("world.set", strength=unit),
    step("collection.create", name=st.just("Col")),
    step("collection.move", objects=st.lists(names, min_size=1, max_size=2, unique=True),
         collection=st.just("Col")),
    step("keyframe.insert", name=names, property=st.just("location"),
         frame=st.integers(1, 20)),
    step("gn.ensure_target", object=names, allow_create_modifier=st.just(True), **{
        k: st.just(v) for k, v in GN.items()
    }),
    step("gn.add_node", object=names, node_id=st.sampled_from(["n1", "n2"]),
         bl_idname=st.just("GeometryNodeMeshCube"), **{k: st.just(v) for k, v in GN.items()}),
    step("gn.set_input", object=names, node_id=st.sampled_from(["n1", "n2"]),
         socket=st.just("Size"), value=coords.map(lambda v: [abs(x) + 1 for x in v]),
         **{k: st.just(v) for k, v in GN.items()}),
    step("gn.remove_node", object=names, node_id=st.sampled_from(["n1", "n2"]),
         **{k: st.just(v) for k, v in GN.items()}),
    step("scene.save_load"),
    step("scene.reset"),
)  # fmt: skip


def difference(cached: Any, full: Any, path: str = "") -> str:
    """Where two snapshots first differ, for a readable failure."""
    if isinstance(cached, dict) and isinstance(full, dict):
        for key in sorted(set(cached) | set(full)):
            if cached.get(key) != full.get(key):
                return difference(cached.get(key), full.get(key), f"{path}.{key}")
    if isinstance(cached, list) and isinstance(full, list) and len(cached) == len(full):
        for i, (a, b) in enumerate(zip(cached, full, strict=True)):
            if a != b:
                return difference(a, b, f"{path}[{i}]")
    return f"{path}: cached {cached!r} != full {full!r}"


async def snapshots_agree(bridge: BridgeProcess, after: str) -> None:
    cached = (await ok(bridge, "scene.snapshot")).data
    full = (await bridge.request("blendmesh/scene.snapshot_full", FullSnapshot)).data
    assert cached == full, f"after {after}: {difference(cached, full)}"


async def agree(bridge: BridgeProcess, after: str) -> None:
    cached = await bridge.fingerprint()
    full = await bridge.fingerprint_full()
    assert cached == full, f"after {after}: cached {cached[:12]} != full {full[:12]}"
    await snapshots_agree(bridge, after)


async def apply(bridge: BridgeProcess, tool: str, args: dict[str, Any], work: Path) -> None:
    if tool == "scene.reset":
        await bridge.reset()
    elif tool == "scene.save_load":
        path = work / "round.blend"
        saved = await bridge.save(str(path))
        assert await bridge.load(str(path)) == saved.hash
    else:
        result = await call(bridge, tool, **args)
        # Every tool here writes, so its result carries the hash, failed or not.
        assert result.scene_hash == await bridge.fingerprint(), f"after {tool} {args}"


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(STEPS, min_size=1, max_size=12))
@pytest.mark.clause("001-§verify.1")
async def test_fingerprint_when_tools_run_in_any_order_equals_the_full_hash(
    shared_bridge: BridgeProcess, steps: list[tuple[str, dict[str, Any]]]
) -> None:
    await shared_bridge.reset()
    # Two objects to start from, so most steps find what they name.
    await ok(shared_bridge, "object.create", primitive="cube", name="A")
    await ok(shared_bridge, "object.create", primitive="monkey", name="B")
    with tempfile.TemporaryDirectory(prefix="blendmesh-fp-") as tmp:
        for tool, args in steps:
            await apply(shared_bridge, tool, args, Path(tmp))
            await agree(shared_bridge, f"{tool} {args}")


async def test_fingerprint_when_linked_duplicates_share_data_follows_both(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="A")
    await ok(bridge, "object.duplicate", name="A", new_name="B", linked=True)
    await ok(bridge, "keyframe.insert", name="A", property="location", frame=1)
    await ok(bridge, "object.duplicate", name="A", new_name="C")
    await agree(bridge, "duplicates")
    await ok(bridge, "keyframe.insert", name="C", property="location", frame=9, value=[1, 1, 1])
    await agree(bridge, "a keyframe on a shared action")
    await ok(bridge, "object.shade", name="A", smooth=True)
    await agree(bridge, "shading shared data")


async def test_fingerprint_when_rename_or_delete_changes_references_follows_them(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="A")
    await ok(bridge, "object.create", primitive="cube", name="B")
    await ok(bridge, "modifier.add", object="B", type="MIRROR", properties={"mirror_object": "A"})
    await ok(bridge, "object.parent", child="B", parent="A")
    before = await bridge.fingerprint()
    await ok(bridge, "object.rename", name="A", new_name="Z")
    await agree(bridge, "renaming a referenced object")
    await ok(bridge, "object.delete", name="Z")
    await agree(bridge, "deleting a referenced object")
    assert await bridge.fingerprint() != before


async def test_fingerprint_full_when_scheme_is_whole_snapshot_gives_the_old_hash(
    bridge: BridgeProcess,
) -> None:
    await ok(bridge, "object.create", primitive="cube", name="A")
    old = await bridge.fingerprint_full("whole_snapshot")
    assert old != await bridge.fingerprint_full()
    # A head recorded with the old hash still verifies; another hash does not.
    assert await hashes_to(bridge, await bridge.fingerprint(), old)
    assert not await hashes_to(bridge, await bridge.fingerprint(), "0" * 64)


async def test_fingerprint_full_when_scheme_unknown_is_refused_naming_it(
    bridge: BridgeProcess,
) -> None:
    unknown: Any = {"scheme": "md5"}  # what the typed client would never send
    with pytest.raises(BridgeError, match="scheme"):
        await bridge.request("blendmesh/scene.fingerprint_full", Fingerprint, unknown)


async def test_scene_save_when_cache_is_stale_logs_and_returns_the_full_hash(
    tmp_path: Path,
) -> None:
    # A wrong declaration would leave a digest that no longer matches its datablock; the
    # test plants one in the bridge's own Python, then saves as a commit does.
    script = (
        SERVER_PRELUDE
        + f"""
import dataclasses
from services.bridge.scene import digests
def rpc(method, **params):
    return answer(method, **params).result
rpc("tools/call", name="object.create", arguments={{"primitive": "cube", "name": "A"}})
# Saving evaluates the depsgraph, whose updates drop digests too: let it settle first.
rpc("blendmesh/scene.save", path={str(tmp_path / "first.blend")!r})
rpc("blendmesh/scene.fingerprint")
key = ("object", "A")
digests.CACHE.entries[key] = dataclasses.replace(digests.CACHE.entries[key], digest="0" * 64)
stale = rpc("blendmesh/scene.fingerprint").hash
full = rpc("blendmesh/scene.fingerprint_full").hash
saved = rpc("blendmesh/scene.save", path={str(tmp_path / "c.blend")!r}).hash
print("RESULT", json.dumps({{"stale": stale, "full": full, "saved": saved,
      "after": rpc("blendmesh/scene.fingerprint").hash}}))
"""
    )
    hashes, output = await script_result(script)
    assert hashes["saved"] == hashes["full"] != hashes["stale"]
    assert hashes["after"] == hashes["full"]  # the cache was rebuilt
    assert "digest cache was stale" in output, output[-2000:]


async def test_fingerprint_when_scene_is_large_recomputes_only_what_changed(
    bridge: BridgeProcess,
) -> None:
    for i in range(200):
        await ok(bridge, "object.create", primitive="cube", name=f"O{i:03d}")
    await bridge.fingerprint()  # fills the cache
    started = asyncio.get_running_loop().time()
    await bridge.fingerprint_full()
    full = asyncio.get_running_loop().time() - started
    await ok(bridge, "object.transform", name="O007", location=[1, 2, 3])
    started = asyncio.get_running_loop().time()
    await bridge.fingerprint()
    cached = asyncio.get_running_loop().time() - started
    await agree(bridge, "one transform among 200 objects")
    assert cached < full, (cached, full)
