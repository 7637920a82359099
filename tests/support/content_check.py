"""The add-on's content fingerprint in whichever Blender runs this file.

``python content_check.py CONTENT_PY OUT`` (the venv's bpy 5.0) or ``blender -b
--factory-startup --python content_check.py -- CONTENT_PY OUT`` (Debian's 3.4): builds a
small scene with what artists change (a mesh with a material and a modifier, a light, a
camera, a keyframe), saves it twice and opens it again, changes what is not content, then
makes one change of each kind and undoes none of them; writes JSON of which fingerprints
equalled the first one.
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


def main() -> None:
    build()
    first = content.fingerprint()
    bpy.ops.wm.save_as_mainfile(filepath=os.path.join(folder, "a.blend"))
    bpy.ops.wm.save_as_mainfile(filepath=os.path.join(folder, "b.blend"), copy=True)
    unchanged = {"saved twice": content.fingerprint()}
    bpy.ops.wm.open_mainfile(filepath=os.path.join(folder, "b.blend"))
    unchanged["opened again"] = content.fingerprint()
    for ob in bpy.data.objects:
        ob.select_set(not ob.select_get())
    bpy.context.view_layer.objects.active = bpy.data.objects["Key"]
    bpy.context.scene.frame_current = 7
    unchanged["selected, active, frame"] = content.fingerprint()
    changed = {}
    for name, (apply, revert) in edits().items():
        apply()
        changed[name] = content.fingerprint()
        revert()
    unchanged["each edit reverted"] = content.fingerprint()
    result = {
        "version": list(bpy.app.version),
        "unchanged": {k: v == first for k, v in unchanged.items()},
        "changed": {k: v != first for k, v in changed.items()},
    }
    with open(args[1], "w", encoding="utf-8") as out:
        json.dump(result, out)


main()
