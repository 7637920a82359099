"""The add-on's content fingerprint in whichever Blender runs this file.

``python content_check.py CONTENT_PY OUT`` (the venv's bpy 5.0) or ``blender -b
--factory-startup --python content_check.py -- CONTENT_PY OUT`` (Debian's 3.4): builds a
small scene with what artists change (a mesh with a material and a modifier, a light, a
camera, a keyframe), saves it twice and opens it again, changes what is not content, then
makes one change of each kind and undoes none of them; writes JSON of which fingerprints
equalled the first one. Every fingerprint is taken with the kept parts (``content.CACHE``,
watched as the add-on watches it) and again in full, and each pair must agree; then the
changes that must make the cache forget a mesh (an edit in Edit Mode, a modifier applied,
undo, a script's geometry change with ``update()``) are made and checked the same way.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Callable
from typing import Any

import bpy

args = sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else sys.argv[1:]
spec = importlib.util.spec_from_file_location("content", args[0])
assert spec is not None and spec.loader is not None
content = importlib.util.module_from_spec(spec)
spec.loader.exec_module(content)
folder = os.path.dirname(args[1])


def build() -> None:
    bpy.ops.mesh.primitive_monkey_add(location=(1, 2, 3))
    monkey = bpy.context.object
    material = bpy.data.materials.new("Skin")
    material.use_nodes = True
    monkey.data.materials.append(material)
    monkey.modifiers.new("Bevel", "BEVEL")
    monkey.keyframe_insert("location", frame=1)
    bpy.ops.object.light_add(type="AREA", location=(0, 0, 4))
    bpy.context.object.name = "Key"
    bpy.ops.object.camera_add(location=(0, -8, 2))


def monkey() -> bpy.types.Object:
    return bpy.data.objects["Suzanne"]


def setter(get: Callable[[], Any], attr: str, to: Any, back: Any) -> tuple[Any, Any]:
    return (lambda: setattr(get(), attr, to)), (lambda: setattr(get(), attr, back))


def edits() -> dict[str, tuple[Callable[[], Any], Callable[[], Any]]]:
    """Each change an artist makes, as (apply, revert)."""
    nodes = bpy.data.materials["Skin"].node_tree.nodes
    z = monkey().data.vertices[0].co.z
    return {
        "moved": setter(lambda: monkey().location, "x", 1.5, 1.0),
        "light": setter(lambda: bpy.data.lights[0], "energy", 99.0, 10.0),
        "material": setter(
            lambda: nodes["Principled BSDF"].inputs["Roughness"], "default_value", 0.9, 0.5
        ),
        "modifier": setter(lambda: monkey().modifiers["Bevel"], "width", 0.3, 0.1),
        "vertex": setter(lambda: monkey().data.vertices[0].co, "z", z + 0.25, z),
        "hidden": setter(monkey, "hide_render", True, False),
        "renamed": (
            lambda: setattr(monkey(), "name", "Ape"),
            lambda: setattr(bpy.data.objects["Ape"], "name", "Suzanne"),
        ),
        "keyframe": (
            lambda: monkey().keyframe_insert("location", frame=20),
            lambda: monkey().keyframe_delete("location", frame=20),
        ),
    }


AGREED: dict[str, bool] = {}  # each step: the kept parts' fingerprint is the full one


def taken(step: str) -> str:
    kept, full = content.fingerprint(), content.fingerprint(full=True)
    AGREED[step] = kept == full
    return str(kept)


def forgets() -> dict[str, bool]:
    """Each change that must make the cache forget a mesh's geometry changes the
    fingerprint (and ``taken`` checks the kept one agrees with the full one)."""
    found, ape = {}, monkey()
    layer = bpy.context.view_layer
    layer.objects.active = ape
    before = taken("before edit mode")
    bpy.ops.object.mode_set(mode="EDIT")
    bpy.ops.mesh.select_all(action="SELECT")
    bpy.ops.transform.translate(value=(0.0, 0.0, 0.5))
    bpy.ops.object.mode_set(mode="OBJECT")
    found["edit mode"] = taken("edit mode") != before
    before = taken("before apply")
    bpy.ops.object.modifier_apply(modifier="Bevel")
    found["modifier applied"] = taken("modifier applied") != before
    before = taken("before script")
    mesh = ape.data
    co = [0.0] * (len(mesh.vertices) * 3)
    mesh.vertices.foreach_get("co", co)
    mesh.vertices.foreach_set("co", [v * 1.5 for v in co])
    mesh.update()
    found["script with update()"] = taken("script with update()") != before
    bpy.ops.ed.undo_push(message="before the move")
    before = taken("before undo")
    mesh.vertices[0].co.x += 2.0
    bpy.ops.ed.undo_push(message="the move")
    moved = taken("moved, to undo")
    bpy.ops.ed.undo()
    after = taken("undone")
    found["undo"] = moved != before and after == before
    bpy.ops.ed.redo()
    found["redo"] = taken("redone") == moved
    return found


def reused() -> dict[str, bool]:
    """What the cache is for: a fingerprint with nothing changed, or after an object was
    only moved, hashes no mesh's geometry again."""
    hashed = []
    geometry = content._geometry
    content._geometry = lambda mesh: hashed.append(mesh.name) or geometry(mesh)
    try:
        content.fingerprint()
        hashed.clear()
        content.fingerprint()
        found = {"nothing changed": hashed == []}
        monkey().location.y += 1.0
        content.fingerprint()
        found["an object moved"] = hashed == []
        monkey().data.vertices[1].co.y += 1.0
        content.fingerprint()
        found["its mesh edited"] = hashed == [monkey().data.name]
    finally:
        content._geometry = geometry
    return found


def main() -> None:
    content.watch()  # as the add-on's register does
    build()
    first = taken("built")
    bpy.ops.wm.save_as_mainfile(filepath=os.path.join(folder, "a.blend"))
    bpy.ops.wm.save_as_mainfile(filepath=os.path.join(folder, "b.blend"), copy=True)
    unchanged = {"saved twice": taken("saved twice")}
    bpy.ops.wm.open_mainfile(filepath=os.path.join(folder, "b.blend"))
    unchanged["opened again"] = taken("opened again")
    for ob in bpy.data.objects:
        ob.select_set(not ob.select_get())
    bpy.context.view_layer.objects.active = bpy.data.objects["Key"]
    bpy.context.scene.frame_current = 7
    unchanged["selected, active, frame"] = taken("selected, active, frame")
    changed = {}
    for name, (apply, revert) in edits().items():
        apply()
        changed[name] = taken(name)
        revert()
    unchanged["each edit reverted"] = taken("each edit reverted")
    result = {
        "version": list(bpy.app.version),
        "unchanged": {k: v == first for k, v in unchanged.items()},
        "changed": {k: v != first for k, v in changed.items()},
        "reused": reused(),
        "forgets": forgets(),
        "agreed": AGREED,
    }
    with open(args[1], "w", encoding="utf-8") as out:
        json.dump(result, out)


main()
