"""The baseline: the same 25 operations applied in-process with bpy's data API, no mesh.

Run by bench/run_latency.py in a child process (the benchmark driver never imports bpy);
prints one JSON line with the per-iteration seconds.
"""

from __future__ import annotations

import json
import math
import sys
import time
from typing import Any

# isort: off
import bpy  # first: importing bpy is what makes bmesh importable
import bmesh

# isort: on

sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
from plan25 import plan25, setup_plan

BUILDERS = {
    "cube": lambda bm: bmesh.ops.create_cube(bm, size=2.0),
    "uv_sphere": lambda bm: bmesh.ops.create_uvsphere(bm, u_segments=32, v_segments=16, radius=1),
    "ico_sphere": lambda bm: bmesh.ops.create_icosphere(bm, subdivisions=2, radius=1),
    "cylinder": lambda bm: bmesh.ops.create_cone(
        bm, cap_ends=True, segments=32, radius1=1, radius2=1, depth=2
    ),
    "cone": lambda bm: bmesh.ops.create_cone(
        bm, cap_ends=True, segments=32, radius1=1, radius2=0, depth=2
    ),
    "plane": lambda bm: bmesh.ops.create_grid(bm, x_segments=1, y_segments=1, size=1),
    "torus": lambda bm: bmesh.ops.create_uvsphere(bm, u_segments=48, v_segments=12, radius=1),
    "monkey": lambda bm: bmesh.ops.create_monkey(bm),
}


def apply(op: dict[str, Any]) -> None:
    a = op["args"]
    match op["tool_name"]:
        case "object.create":
            mesh = bpy.data.meshes.new(a["name"])
            bm = bmesh.new()
            BUILDERS[a["primitive"]](bm)
            bm.to_mesh(mesh)
            bm.free()
            obj = bpy.data.objects.new(a["name"], mesh)
            bpy.context.scene.collection.objects.link(obj)
            obj.location = a["location"]
        case "object.transform":
            obj = bpy.data.objects[a["name"]]
            obj.location = a["location"]
            obj.rotation_euler = [math.radians(v) for v in a["rotation"]]
        case "material.assign":
            obj = bpy.data.objects[a["object"]]
            name = f"{a['object']}_Material"
            mat = bpy.data.materials.get(name) or bpy.data.materials.new(name)
            mat.use_nodes = True
            bsdf = mat.node_tree.nodes["Principled BSDF"]
            bsdf.inputs["Base Color"].default_value = [*a["base_color"], 1.0]
            bsdf.inputs["Roughness"].default_value = a["roughness"]
            if not obj.data.materials:
                obj.data.materials.append(mat)
            obj.data.materials[0] = mat
        case "modifier.add":
            mod = bpy.data.objects[a["object"]].modifiers.new("Bevel", "BEVEL")
            mod.width = a["properties"]["width"]
        case "modifier.remove":
            obj = bpy.data.objects[a["object"]]
            obj.modifiers.remove(obj.modifiers[a["name"]])


def main() -> None:
    runs = int(sys.argv[1])
    bpy.ops.wm.read_factory_settings(use_empty=True)
    for op in setup_plan()["operations"]:
        apply(op)
    seconds = []
    for i in range(runs):
        ops = plan25(i)["operations"]
        started = time.perf_counter()
        for op in ops:
            apply(op)
        seconds.append(time.perf_counter() - started)
    sys.__stdout__.write("RESULT " + json.dumps(seconds) + "\n")


if __name__ == "__main__":
    main()
