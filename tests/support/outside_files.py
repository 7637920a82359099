""".blend files that reach outside themselves, saved by Blender as a user would save them:
another user's private scene, an upload linking it, and one file for each kind of
external reference, for the tests that blendmesh refuses them.

Every path in them is absolute (``relative_remap=False``), so a message that shows a host
path would show the test's folder. Made by a Python of its own: the test process never
imports bpy.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.bridges import script_result

# file in uploads/ -> (kind, datablock name, the last part of its path) a refusal names
REFERENCES: dict[str, tuple[str, str, str]] = {
    "image.blend": ("image", "Bark", "tex.png"),
    "font.blend": ("font", "Lettering", "lettering.woff2"),
    "sound.blend": ("sound", "Voice", "voice.wav"),
    "volume.blend": ("volume", "Smoke", "smoke.vdb"),
    "cache_file.blend": ("cache file", "Shot", "shot.abc"),
    "text.blend": ("text", "Notes", "notes.txt"),
    "movie_clip.blend": ("movie clip", "Plate", "tex.png"),
}

_SCRIPT = """
import os, shutil, bpy

scenes, uploads = os.path.join(folder, "scenes"), os.path.join(folder, "uploads")
os.makedirs(scenes), os.makedirs(uploads)
png = os.path.join(uploads, "tex.png")

def fresh():
    bpy.ops.wm.read_factory_settings(use_empty=True)

def cube(name, location=(0, 0, 0)):
    bpy.ops.mesh.primitive_cube_add(location=location)
    bpy.context.active_object.name = name
    return bpy.context.active_object

def kept(datablock, name):
    datablock.name = name
    datablock.use_fake_user = True
    return datablock

def save(path):
    bpy.ops.wm.save_as_mainfile(filepath=path, compress=True, relative_remap=False)

fresh(); cube("BobSecretPlans", (4, 5, 6)); save(os.path.join(scenes, "bobprivate.blend"))

fresh(); cube("AliceCube")
with bpy.data.libraries.load(os.path.join(scenes, "bobprivate.blend"), link=True) as (_, to):
    to.objects = ["BobSecretPlans"]
bpy.context.scene.collection.objects.link(to.objects[0])
save(os.path.join(uploads, "linked.blend"))

fresh()
pixels = bpy.data.images.new("Pixels", 4, 4)
pixels.filepath_raw, pixels.file_format = png, "PNG"
pixels.save()

fresh(); kept(bpy.data.images.load(png, check_existing=False), "Bark")
save(os.path.join(uploads, "image.blend"))
fresh(); cube("Crate"); kept(bpy.data.images.load(png), "Wood").pack()
save(os.path.join(uploads, "packed_image.blend"))

fonts = os.path.join(bpy.utils.resource_path("LOCAL"), "datafiles", "fonts")
shutil.copy(os.path.join(fonts, "Inter.woff2"), os.path.join(scenes, "lettering.woff2"))
fresh(); kept(bpy.data.fonts.load(os.path.join(scenes, "lettering.woff2")), "Lettering")
save(os.path.join(uploads, "font.blend"))
voice = os.path.join(scenes, "voice.wav")  # never read while saving
fresh(); kept(bpy.data.sounds.load(voice, check_existing=False), "Voice")
save(os.path.join(uploads, "sound.blend"))
fresh(); kept(bpy.data.volumes.new("Smoke"), "Smoke").filepath = os.path.join(scenes, "smoke.vdb")
save(os.path.join(uploads, "volume.blend"))
fresh(); cube("Shot")
bpy.ops.wm.alembic_export(filepath=os.path.join(scenes, "shot.abc"))
fresh()
bpy.ops.wm.alembic_import(filepath=os.path.join(scenes, "shot.abc"), as_background_job=False)
kept(bpy.data.cache_files[0], "Shot")
save(os.path.join(uploads, "cache_file.blend"))
fresh(); kept(bpy.data.texts.new("Notes"), "Notes").filepath = os.path.join(scenes, "notes.txt")
save(os.path.join(uploads, "text.blend"))
fresh(); kept(bpy.data.movieclips.load(png), "Plate")
save(os.path.join(uploads, "movie_clip.blend"))

bpy.ops.wm.read_factory_settings(use_empty=False)  # its material recalls a brush library
save(os.path.join(uploads, "startup.blend"))

fresh()
cache = cube("Cached").modifiers.new("Cache", "MESH_CACHE")
cache.filepath = os.path.join(scenes, "secret.pc2")
save(os.path.join(uploads, "mesh_cache.blend"))
print("RESULT " + json.dumps(sorted(os.listdir(uploads))))
"""


async def make_files(folder: Path) -> Path:
    """The files under ``folder``: ``scenes/bobprivate.blend`` (an object BobSecretPlans),
    and in ``uploads/``: ``linked.blend`` (links BobSecretPlans from it beside a local
    AliceCube), one file for each of ``REFERENCES``, ``packed_image.blend`` (an object
    Crate and a packed image Wood), ``startup.blend`` (Blender's default scene) and
    ``mesh_cache.blend`` (a Mesh Cache modifier reading ``scenes/secret.pc2``). Returns
    the uploads folder."""
    made, _ = await script_result(f"import json\nfolder = {str(folder)!r}\n" + _SCRIPT)
    wanted = {"linked.blend", "packed_image.blend", "startup.blend", "mesh_cache.blend"}
    assert set(REFERENCES) | wanted <= set(made), made
    return folder / "uploads"
