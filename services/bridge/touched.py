"""Tool calls that keep the digest cache true: each drops the digests of what it touched.

The names a tool declares (``registry.Touches``) are read from its arguments before the
call (a rename or a delete leaves nothing to look up afterwards) and from its arguments
and result after it; each object among them brings its data, action and, when declared,
node groups, since linked duplicates share those and their digests read them.

The result of every call of a tool that writes carries the scene hash right after it
(``ToolResult.scene_hash``): the executor takes the hash after each such call anyway, to
record an operation or to see whether a failed one changed the scene, and this spares it
the round trip. A failed call that may have changed the scene cleared the cache, so its
hash is the full one; the executor's rollback check would have paid for that too. So does
a call that ``bounded`` refuses for leaving the scene over the geometry budget.
"""

from __future__ import annotations

from typing import Any

import bpy
import msgspec

from contracts.bridge import ToolResult
from services.bridge import registry
from services.bridge.budget import bounded
from services.bridge.scene.digests import CACHE, action_name, nested_groups, node_groups_of

from .registry import Touches


def owned(names: set[str], touches: Touches) -> set[str]:
    """``names`` plus what the objects among them own and read."""
    found = set(names)
    for name in names:
        ob = bpy.data.objects.get(name)
        if ob is None:
            continue
        if ob.data is not None:
            found.add(ob.data.name)
        action = action_name(ob)
        if action:
            found.add(action)
        if touches.node_groups:
            stack = node_groups_of(ob)
            while stack:
                group = stack.pop()
                if group not in found and group in bpy.data.node_groups:
                    found.add(group)
                    stack.extend(nested_groups(bpy.data.node_groups[group]))
    return found


def call(name: str, arguments: dict[str, Any], blender_version: tuple[int, ...]) -> ToolResult:
    """``registry.call``, then drop the digests the call may have changed; a call that
    changed the scene is then held to the geometry budget (``bounded``)."""
    reg = registry.REGISTRY.get(name)
    touches = None if reg is None else reg.spec.touches
    if touches is None:
        return registry.call(name, arguments, blender_version)  # unknown or read-only
    before = owned(touches.named(arguments), touches)
    try:
        estimates = bounded.ESTIMATES.current()
    except Exception as exc:  # noqa: BLE001 - a bug there must not kill the bridge
        failed = registry.failed("internal_error", bounded.unchecked(name, exc))
        return msgspec.structs.replace(failed, scene_hash=CACHE.scene_hash()[0])
    result = registry.call(name, arguments, blender_version)
    if touches.everything or (result.mutated and not result.ok):
        # A failed writer may have stopped anywhere; the executor restores a checkpoint.
        CACHE.clear()
    else:
        CACHE.invalidate(before | owned(touches.named(arguments, result.data), touches))
    if result.ok and result.mutated:
        result = bounded.held(name, result, estimates)
        if not result.ok:
            CACHE.clear()
    return msgspec.structs.replace(result, scene_hash=CACHE.scene_hash()[0])
