"""A Blender session with the blendmesh add-on installed, driven line by line.

Run by the venv's Python in a child process (bpy is imported there, never in pytest's):
``python tests/support/addon_session.py ZIP``. It installs the zip as an extension, as an artist
does, then reads one JSON command a line from stdin and answers each with one line,
``@@`` and the session's state as JSON (Blender prints lines of its own on stdout too).

The pip ``bpy`` has no event loop, so the add-on's timer never fires by itself: this
driver is the loop, calling the add-on's own timer function until its worker is idle.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import bpy

REPO = "user_default"
MODULE = f"bl_ext.{REPO}.blendmesh"


def install(path: str) -> Any:
    done = bpy.ops.extensions.package_install_files(
        filepath=path, repo=REPO, enable_on_install=True
    )
    assert done == {"FINISHED"}, done
    return sys.modules[MODULE]


LONGEST = {"tick": 0.0}  # the longest tick of the last command that ticked, in s
# Seconds from the last command's start to the end of the tick after which the object it
# waited for was in the session (Blender draws it at its next redraw); -1: it never was.
VISIBLE = {"after": -1.0}


def settle(addon: Any, timeout: float, appear: str = "", began: float = 0.0) -> None:
    """Tick as Blender's timer would until nothing is left to do, noting when an object
    named ``appear`` came into the session (timed from ``began``)."""
    actions = addon.actions
    deadline = time.monotonic() + timeout
    LONGEST["tick"], VISIBLE["after"] = 0.0, -1.0
    while time.monotonic() < deadline:
        start = time.perf_counter()
        interval = actions.tick()
        LONGEST["tick"] = max(LONGEST["tick"], time.perf_counter() - start)
        if appear and VISIBLE["after"] < 0 and appear in bpy.data.objects:
            VISIBLE["after"] = time.perf_counter() - began
        if actions.WORKER.idle and not actions.SESSION.busy and not addon.replaying.checking():
            return
        time.sleep(interval)  # when Blender would call the timer next
    raise TimeoutError(f"the add-on was still busy after {timeout} s")


def watch(addon: Any, what: str, timeout: float) -> None:
    """Tick, following the scene, until the session lists ``what``."""
    actions = addon.actions
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        actions.tick()
        if getattr(actions.SESSION, what) and actions.WORKER.idle:
            return
        time.sleep(0.1)
    raise TimeoutError(f"the panel listed no {what} within {timeout} s")


def synced_to(addon: Any, revision: int, timeout: float) -> None:
    """Tick, following the scene, until the session holds ``revision`` or says why not."""
    actions = addon.actions
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        interval = actions.tick()
        session = actions.SESSION
        done = session.synced is not None and session.synced.revision >= revision
        if (done or session.error or "cannot be replayed" in session.notice) and (
            actions.WORKER.idle and not addon.replaying.checking()
        ):
            return
        time.sleep(interval)
    raise TimeoutError(f"the session did not reach revision {revision} within {timeout} s")


def held(addon: Any, seconds: float) -> float:
    """Tick as Blender's timer would for ``seconds``, following the scene; the longest
    single tick in ms (a frame Blender could not draw meanwhile)."""
    actions, longest = addon.actions, 0.0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        start = time.perf_counter()
        actions.tick()
        longest = max(longest, time.perf_counter() - start)
        time.sleep(0.02)
    return round(longest * 1000, 1)


def by_hand(name: str) -> float:
    """Add an object as Shift+A does (a cube, its scene's update, an undo step) and answer
    the ms Blender took: what any addition costs on this scene, with or without blendmesh."""
    start = time.perf_counter()
    bpy.ops.mesh.primitive_cube_add(size=0.5, location=(0, 0, 6))
    bpy.context.object.name = name
    bpy.ops.ed.undo_push(message=f"Add {name}")
    return round((time.perf_counter() - start) * 1000, 1)


def state(addon: Any) -> dict[str, Any]:
    session = addon.actions.SESSION
    synced = session.synced
    return {
        "busy": session.busy,
        "error": session.error,
        "notice": session.notice,
        "progress": session.progress,
        "run": session.run,
        "approvals": session.approvals,
        "newer": session.newer,
        "others": session.others,
        "synced": None if synced is None else {"scene": synced.scene_id, "rev": synced.revision},
        "changedLocally": session.changed_locally,
        "digestKnown": bool(synced and synced.digest),
        "user": session.user,
        "objects": sorted(o.name for o in bpy.data.objects),
        "animated": sorted(o.name for o in bpy.data.objects if o.animation_data),
        "mode": bpy.context.mode,
        "filepath": bpy.data.filepath,
        "scene": bpy.context.scene.blendmesh_scene,
        "longestTickMs": round(LONGEST["tick"] * 1000, 1),
        "visibleAfterS": round(VISIBLE["after"], 3),
        "pushedBytes": session.pushed_bytes,
        "changes": session.changes,
    }


def handle(addon: Any, command: dict[str, Any]) -> dict[str, Any]:
    match command["do"]:
        case "prefs":
            prefs = bpy.context.preferences.addons[MODULE].preferences
            prefs.gateway_url, prefs.token = command["url"], command["token"]
            prefs.follow = command.get("follow", True)
            prefs.live = command.get("live", True)
            prefs.before_ask = command.get("before_ask", "PUSH")
            subtype = type(prefs).bl_rna.properties["token"].subtype
            return {"tokenSubtype": subtype, "ops": sorted(dir(bpy.ops.blendmesh))}
        case "scene":
            bpy.context.scene.blendmesh_scene = command["scene"]
        case "op":
            began = time.perf_counter()
            getattr(bpy.ops.blendmesh, command["name"])(**command.get("args", {}))
            settle(addon, command.get("timeout", 180), command.get("appear", ""), began)
        case "edit":  # the artist adds an object by hand
            mesh = bpy.data.meshes.new(command["name"])
            obj = bpy.data.objects.new(command["name"], mesh)
            bpy.context.scene.collection.objects.link(obj)
        case "select":  # the artist clicks objects in the viewport
            layer = bpy.context.view_layer
            for ob in layer.objects:
                ob.select_set(ob.name in command["names"])
            layer.objects.active = bpy.data.objects.get(command.get("active") or "")
        case "open":  # the artist opens a file
            bpy.ops.wm.open_mainfile(filepath=command["path"])
        case "by_hand":  # what Blender itself takes when the artist adds an object
            return {**state(addon), "by_hand_ms": by_hand(command["name"])}
        case "applied":  # a fetched run comes in, as the worker hands it over; no tick
            runs = [(command["rev"], command["ran"])] if command.get("ran") else []
            session = addon.actions.SESSION
            stopped = command.get("stopped", "")
            addon.replaying.applied(session, command["scene"], runs, stopped, None)
        case "tick":  # one tick of Blender's timer
            addon.actions.tick()
        case "move":  # the artist moves one object by hand
            bpy.data.objects[command["name"]].location.x += command.get("by", 1.0)
        case "copy_size":  # the bytes a push of the open file sends
            return {**state(addon), "bytes": len(addon.files.saved_copy())}
        case "hold":  # the add-on's longest hold of Blender's thread per tick, following
            return {**state(addon), "hold_ms": held(addon, command.get("seconds", 10))}
        case "save":
            bpy.ops.wm.save_as_mainfile(filepath=command["path"])
        case "watch":
            watch(addon, command["what"], command.get("timeout", 60))
        case "synced":  # follow until the session holds revision ``rev`` (or gives up)
            synced_to(addon, command["rev"], command.get("timeout", 60))
        case "replay":  # a run's operations, replayed as the add-on does
            try:
                addon.live.replay(command["ran"])
            except addon.tools.ToolFailure as exc:
                return {**state(addon), "failure": [exc.code, exc.message]}
        case "differences":
            return {**state(addon), "differences": addon.live.differences(command["summary"])}
        case "mode":  # the artist enters or leaves a mode with the active object
            layer = bpy.context.view_layer
            layer.objects.active = bpy.data.objects[command["active"]]
            bpy.ops.object.mode_set(mode=command["mode"])
        case "undo" | "redo":  # Ctrl-Z, Ctrl-Shift-Z
            getattr(bpy.ops.ed, command["do"])()
        case "quit":
            return {}
        case other:
            raise ValueError(f"unknown command {other}")
    return state(addon)


def main() -> None:
    addon = install(sys.argv[1])
    print("@@" + json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        try:
            answer = handle(addon, command)
        except Exception as exc:  # noqa: BLE001 - the test reads what went wrong
            answer = {"driverError": f"{type(exc).__name__}: {exc}"}
        print("@@" + json.dumps(answer), flush=True)
        if command["do"] == "quit":
            break


if __name__ == "__main__":
    main()
