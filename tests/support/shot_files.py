"""A studio's shot, saved by Blender as an artist would: a set file linking a character
from one library .blend (with a library override, its location changed in the shot) and a
prop from another, by paths relative to the shot. Made by a Python of its own: the test
process never imports bpy.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

HERO_X = 2.5  # the overridden location the shot stores

MAKE = """
import os, sys, bpy
folder, links = sys.argv[1], sys.argv[2]
lib = os.path.join(folder, "lib")
os.makedirs(lib, exist_ok=True)
def fresh():
    bpy.ops.wm.read_factory_settings(use_empty=True)
def save(path):
    bpy.ops.wm.save_as_mainfile(filepath=path, relative_remap=False)
fresh()
bpy.ops.mesh.primitive_cube_add()
hero = bpy.context.active_object
hero.name = "Hero"
rig = bpy.data.collections.new("HeroRig")
rig.objects.link(hero)
bpy.context.scene.collection.objects.unlink(hero)
bpy.context.scene.collection.children.link(rig)
save(os.path.join(lib, "Characters.blend"))
fresh()
bpy.ops.mesh.primitive_uv_sphere_add(location=(0, 3, 0))
bpy.context.active_object.name = "Lamp"
save(os.path.join(lib, "props.blend"))
fresh()
bpy.ops.mesh.primitive_plane_add(size=10)
bpy.context.active_object.name = "Ground"
with bpy.data.libraries.load(os.path.join(lib, "Characters.blend"), link=True, relative=True) as (
    _, to
):
    to.collections = ["HeroRig"]
to.collections[0].override_hierarchy_create(bpy.context.scene, bpy.context.view_layer)
hero = next(o for o in bpy.data.objects if o.name == "Hero" and o.override_library)
hero.location.x = float(sys.argv[3])
with bpy.data.libraries.load(os.path.join(lib, "props.blend"), link=True, relative=True) as (_, to):
    to.objects = ["Lamp"]
bpy.context.scene.collection.objects.link(to.objects[0])
save(os.path.join(folder, "shot.blend"))
"""

# Opens a downloaded shot as Blender would and says what it found.
OPEN = """
import json, sys, bpy
bpy.ops.wm.open_mainfile(filepath=sys.argv[1], load_ui=False, use_scripts=False)
found = {
    "libraries": sorted(
        (lib.filepath, lib.is_missing, bool(lib.is_editable)) for lib in bpy.data.libraries
    ),
    "objects": sorted(
        (o.name, o.library.filepath if o.library else "", bool(o.override_library),
         round(o.location.x, 4), len(o.data.vertices) if o.type == "MESH" else 0)
        for o in bpy.data.objects
    ),
}
print("RESULT " + json.dumps(found))
"""


async def blender(script: str, *args: str) -> str:
    """Run ``script`` in a fresh bpy process; what it printed."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        script,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    assert proc.returncode == 0, err.decode(errors="replace")[-2000:]
    return out.decode(errors="replace")


async def make_shot(folder: Path, hero_x: float = HERO_X) -> Path:
    """``folder``/shot.blend linking ``folder``/lib/Characters.blend and props.blend."""
    await blender(MAKE, str(folder), "", str(hero_x))
    return folder / "shot.blend"


async def opened(path: Path) -> dict[str, Any]:
    """What Blender finds in the .blend at ``path``: its libraries (path, missing) and its
    objects (name, library path, overridden, location x, vertices)."""
    out = await blender(OPEN, str(path))
    line = next(x for x in out.splitlines() if x.startswith("RESULT "))
    found: dict[str, Any] = json.loads(line.removeprefix("RESULT "))
    return found
