"""The open file: a copy of it to push, and opening a pulled revision.

A copy saved with ``copy=True`` leaves the artist's file, its path and its unsaved state
as they were. Whether the session changed since the last push or pull is told by its
content (content.py), never by a copy's bytes: Blender 3.4 saves an unchanged session
differently each time.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

import bpy

UNSAVED_FOLDER = os.path.join("~", "blendmesh")  # pulls into an untitled session land here


@contextmanager
def _without_prompt() -> Iterator[None]:
    # The prompt box is window-manager state Blender saves with the file: typing a request
    # must not count as a change of the scene, nor travel with a push.
    wm = bpy.context.window_manager
    prompt = wm.blendmesh_prompt
    wm.blendmesh_prompt = ""
    try:
        yield
    finally:
        wm.blendmesh_prompt = prompt


def saved_copy() -> bytes:
    """The open session as a .blend."""
    with tempfile.TemporaryDirectory(prefix="blendmesh-") as folder:
        path = os.path.join(folder, "copy.blend")
        with _without_prompt():
            bpy.ops.wm.save_as_mainfile(filepath=path, copy=True, compress=False)
        with open(path, "rb") as f:
            data = f.read()
    return data


def default_scene_id() -> str:
    """A scene id from the open file's name (``room.blend`` -> ``room``)."""
    stem = os.path.splitext(os.path.basename(bpy.data.filepath))[0]
    return re.sub(r"[^A-Za-z0-9_-]", "-", stem)[:128] or "untitled"


def pulled_path(scene_id: str) -> str:
    """Where a pulled revision is written: over the open file, or, for an untitled
    session, ``~/blendmesh/<scene>.blend``."""
    if bpy.data.filepath:
        return bpy.data.filepath
    folder = os.path.expanduser(UNSAVED_FOLDER)
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, f"{scene_id}.blend")


def keep_aside(scene_id: str, data: bytes) -> str:
    """The artist's version, written beside their file (or in ~/blendmesh) under a name
    of its own before a pull replaces the session."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    folder = os.path.dirname(pulled_path(scene_id))
    stem = os.path.splitext(os.path.basename(bpy.data.filepath))[0] or scene_id
    path = os.path.join(folder, f"{stem}-mine-{stamp}.blend")
    with open(path, "xb") as f:  # never over another kept version
        f.write(data)
    return path


def open_pulled(scene_id: str, data: bytes) -> str:
    """Write ``data`` where the open file lives and open it in place of the session.

    The file on disk is kept as ``<file>.blend1`` (Blender's own backup name) first: the
    session matched the last sync, but the disk may hold a save the artist undid since.
    """
    path = pulled_path(scene_id)
    if os.path.exists(path):
        shutil.copy2(path, path + "1")
    partial = path + ".part"
    with open(partial, "wb") as f:
        f.write(data)
    os.replace(partial, path)
    bpy.ops.wm.open_mainfile(filepath=path, load_ui=False)
    return path
