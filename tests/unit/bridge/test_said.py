"""Blender's words made fit for a user: no traceback, no host path."""

from __future__ import annotations

from services.bridge.said import MAX_CHARS, plain

IMPORTER = """Error: Python: Traceback (most recent call last):
  File "/srv/app/.venv/lib/python3.11/site-packages/bpy/5.0/scripts/addons_core/io_scene_gltf2/__init__.py", line 1, in execute
    return self.import_gltf2(context)
  File "/srv/app/.venv/lib/python3.11/site-packages/bpy/5.0/scripts/addons_core/io_scene_gltf2/blender/imp/vnode.py", line 139, in add
    add_nodes_to_scene(idx_scene, child)
  [Previous line repeated 976 more times]
RecursionError: maximum recursion depth exceeded
Location: /srv/app/.venv/lib/python3.11/site-packages/bpy/5.0/scripts/modules/bpy/ops.py:109
"""  # noqa: E501 - as Blender writes it


def test_plain_when_an_importer_raised_keeps_only_the_error() -> None:
    said = plain(IMPORTER)
    assert said == "Error: Python: RecursionError: maximum recursion depth exceeded"


def test_plain_when_paths_are_named_keeps_their_last_part() -> None:
    said = plain("cannot read /home/bob/scenes/secret.blend or C:\\Users\\ana\\x.fbx now")
    assert said == "cannot read secret.blend or x.fbx now"


def test_plain_when_long_is_cut_and_says_so() -> None:
    said = plain("x" * 5000)
    assert len(said) == MAX_CHARS and said.endswith("...")


def test_plain_when_nothing_to_hide_is_unchanged() -> None:
    assert plain("Blender returned {'CANCELLED'}") == "Blender returned {'CANCELLED'}"
