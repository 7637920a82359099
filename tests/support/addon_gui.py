"""The blendmesh add-on in Blender's own window, for the GUI test (tests/e2e/test_addon_gui.py).

Run by a real Blender with a window (under Xvfb in CI), its pointer and keys driven by
xdotool: ``blender --factory-startup --python tests/support/addon_gui.py -- ZIP
GATEWAY_URL TOKEN OUTPUT_DIR SCENE``. It installs the zip as a classic add-on, opens the
sidebar on the blendmesh tab, pushes the startup scene, pulls it back untouched (refused
by name: the mesh's Blender 5 saved the revision), adds an object by hand and asks for a
cube (the hand-made change is pushed first and approved), sees the cube arrive in the
open session without a reload, presses Ctrl-Z and Ctrl-Shift-Z in the window, sees a run
made through another door arrive, asks to delete the cube, takes a screenshot while the
approval waits, approves it, records the main loop's frame gaps while following, and
quits. Every step runs from timers, as the add-on's own work does; each
finding is printed as a ``@@`` JSON line for the test to read.
"""

import json
import subprocess
import sys
import threading
import time
import urllib.request

import addon_utils
import bpy

ZIP, URL, TOKEN, OUT, SCENE = sys.argv[sys.argv.index("--") + 1 :][:5]
DEADLINE = time.monotonic() + 240


def say(**finding):
    print("@@" + json.dumps(finding), flush=True)


def view3d():
    window = bpy.context.window_manager.windows[0]
    area = max((a for a in window.screen.areas if a.type == "VIEW_3D"), key=lambda a: a.width)
    sidebar = next(r for r in area.regions if r.type == "UI")
    return window, area, sidebar


def install():
    bpy.ops.preferences.addon_install(filepath=ZIP, overwrite=True)
    addon_utils.enable("blendmesh", default_set=True, handle_error=None)
    addon = sys.modules["blendmesh"]
    prefs = bpy.context.preferences.addons["blendmesh"].preferences
    prefs.gateway_url, prefs.token = URL, TOKEN
    bpy.context.scene.blendmesh_scene = SCENE
    watch_panel()
    area = view3d()[1]
    area.spaces.active.show_region_ui = True
    return addon


DRAWN = {"at": 0.0}  # when blendmesh's sidebar panel last drew: its tab is the active one


def watch_panel():
    """Note each draw of the add-on's panel, so the clicks down the tab strip stop at
    its tab instead of going on to the strip's end (31 clicks, 9 s of a busy window)."""
    panel = sys.modules["blendmesh.panel"].BLENDMESH_PT_panel
    draw = panel.draw

    def noted(self, context):
        DRAWN["at"] = time.monotonic()
        draw(self, context)

    panel.draw = noted


def xdo(*args):
    """xdotool: real pointer and key events from the X server, as a person's mouse and
    keyboard send them."""
    done = subprocess.run(["xdotool", *map(str, args)], capture_output=True, text=True, timeout=10)
    if done.returncode != 0:
        raise RuntimeError(f"xdotool {' '.join(map(str, args))}: {done.stderr.strip()}")
    return done.stdout


def on_screen(x, y):
    """Blender's window coordinates (from its bottom left) as the X screen's (top left)."""
    window = bpy.context.window_manager.windows[0]
    found = [w for w in xdo("search", "--onlyvisible", "--name", "Blender").split() if w]
    geometry = {}
    for line in xdo("getwindowgeometry", "--shell", found[-1]).splitlines():
        key, _, value = line.partition("=")
        geometry[key] = int(value)
    return geometry["X"] + x, geometry["Y"] + geometry["HEIGHT"] - (y - window.y)


def pointer_to(x, y):
    xdo("mousemove", *on_screen(x, y))


def show_tab(tries):
    """Click down the sidebar's tab strip with the pointer, as an artist would (Blender
    3.4 has no property for the active tab), until blendmesh's panel draws: tabs are in
    the order they were registered, so the last one hit is blendmesh's; clicks past the
    last tab hit nothing."""
    if DRAWN["at"] or tries > 30:
        return True
    _, area, sidebar = view3d()
    pointer_to(sidebar.x + sidebar.width - 9, sidebar.y + sidebar.height - 30 - 15 * tries)
    xdo("click", 1)
    area.tag_redraw()
    return False


GAPS = {"on": False, "last": 0.0, "gaps": []}  # the UI's frame gaps while following


def sample_gaps():
    """A timer every 20 ms: the time between its calls is how long Blender's main loop
    was held (by drawing, by the add-on's work, by anything else on its thread)."""
    now = time.monotonic()
    if GAPS["on"] and GAPS["last"]:
        GAPS["gaps"].append(now - GAPS["last"])
    GAPS["last"] = now
    return 0.02


WORK = {"max": 0.0}  # the add-on's longest piece of work on Blender's thread, following


def timed(function):
    """``function``, its longest call while following noted in WORK: the add-on's own
    share of a frame gap, beside what Blender's drawing takes."""

    def call(*args, **kwargs):
        start = time.monotonic()
        try:
            return function(*args, **kwargs)
        finally:
            if GAPS["on"]:
                WORK["max"] = max(WORK["max"], time.monotonic() - start)

    return call


def following(on):
    GAPS["on"], GAPS["last"] = on, 0.0
    return True


def keys(combo):
    """Keys pressed with the pointer over the 3D view (``ctrl+z``), from the X server."""
    _, area, _ = view3d()
    pointer_to(area.x + area.width // 2, area.y + area.height // 2)
    xdo("key", combo)
    return True


def other_door(prompt, answers):
    """A run on the scene made without the add-on (the CLI, an MCP host), off Blender's
    thread as any other client is."""

    def post():
        body = json.dumps({"prompt": prompt, "sceneId": SCENE}).encode()
        request = urllib.request.Request(
            URL + "/api/agent/run",
            body,
            {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=120) as answer:
            answers.append(json.loads(answer.read()))

    threading.Thread(target=post, daemon=True).start()
    return True


def hand_made(name):
    """An object the artist adds by hand (not on the mesh), one undo step, as Shift-A is."""
    ob = bpy.data.objects.new(name, bpy.data.meshes.new(name))
    bpy.context.scene.collection.objects.link(ob)
    bpy.ops.ed.undo_push(message=f"Add {name}")
    return True


def screenshot(name):
    window, area, _ = view3d()
    with bpy.context.temp_override(window=window, area=area):
        bpy.ops.screen.screenshot_area(filepath=f"{OUT}/{name}")
    say(screenshot=name)


def main():
    addon = install()
    session, worker = addon.actions.SESSION, addon.actions.WORKER
    # The timer calls these through the module: what they take is the add-on's work.
    worker.drain = timed(worker.drain)
    addon.actions.follow = timed(addon.actions.follow)
    state = {"step": 0, "tries": 0, "since": time.monotonic(), "door": []}

    def idle():
        return worker.idle and not session.busy

    def refused_as_newer():
        if session.changed_locally:
            raise AssertionError("the pull took the untouched session for a changed one")
        named = "cannot open files from a newer Blender" in session.error
        return named and session.too_new == "5.0"

    def at(revision):
        return session.synced is not None and session.synced.revision == revision

    def animated(name):
        ob = bpy.data.objects.get(name)
        return ob is not None and ob.animation_data is not None

    def has(*names):
        return all(n in bpy.data.objects for n in names)

    def prompt(text):
        bpy.context.window_manager.blendmesh_prompt = text
        bpy.ops.blendmesh.ask()

    steps = [
        ("tab", lambda: show_tab(state["tries"])),
        ("push", lambda: bpy.ops.blendmesh.push() and True),
        ("pushed", lambda: idle() and session.synced is not None),
        # Nothing touched since the push: a pull must recognise the session as unchanged
        # (Blender 3.4 saves it with other bytes each time, so a file digest never did),
        # then refuse the revision by name, since the mesh's Blender 5 saved it.
        ("pull-unchanged", lambda: bpy.ops.blendmesh.pull() and True),
        ("pull-refused", lambda: idle() and refused_as_newer()),
        ("hand-made", lambda: hand_made("Mine")),
        ("ask-first", lambda: prompt("add a cube named Box at 0 0 2") or True),
        # The hand-made change goes first, as its own revision, which waits for approval.
        ("pushed-first", lambda: idle() and "pushed first" in session.notice),
        ("approve-push", lambda: bpy.ops.blendmesh.approve() and True),
        ("push-approved", lambda: idle() and session.synced.revision == 2),
        ("ask", lambda: prompt("add a cube named Box at 0 0 2") or True),
        ("asked", lambda: idle() and at(3) and has("Box", "Mine") and not bpy.data.filepath),
        ("settle", lambda: time.monotonic() - state["since"] > 1.5),
        ("shot-completed", lambda: screenshot("panel-request-completed.png") or True),
        ("ctrl-z", lambda: keys("ctrl+z")),
        ("undone", lambda: "Box" not in bpy.data.objects and has("Mine")),
        ("ctrl-shift-z", lambda: keys("ctrl+shift+z")),
        ("redone", lambda: has("Box", "Mine")),
        ("other-door", lambda: other_door("add a cone named Tip at 2 0 0", state["door"])),
        ("door-ran", lambda: idle() and at(4) and has("Tip", "Box", "Mine")),
        ("door-light", lambda: other_door("add a sun light named Key at 0 0 5", state["door"])),
        ("light-came", lambda: idle() and at(5) and has("Key")),
        ("door-key", lambda: other_door("keyframe Tip location at frame 12", state["door"])),
        ("key-came", lambda: idle() and at(6) and animated("Tip")),
        ("delete", lambda: prompt("delete Box") or True),
        ("waiting", lambda: idle() and bool(session.approvals)),
        ("settle2", lambda: time.monotonic() - state["since"] > 1.5),
        ("shot-approval", lambda: screenshot("panel-approval-waiting.png") or True),
        ("approve", lambda: bpy.ops.blendmesh.approve() and True),
        ("deleted", lambda: idle() and at(7) and "Box" not in bpy.data.objects),
        ("shot-deleted", lambda: screenshot("session-after-approval.png") or True),
        # Idle with follow on (a look at the scene every 3 s): how long frames wait, once
        # the screenshot's report in the status bar is gone.
        ("settle3", lambda: time.monotonic() - state["since"] > 3),
        ("follow-start", lambda: following(True)),
        ("follow-idle", lambda: time.monotonic() - state["since"] > 9.5),
        ("follow-end", lambda: not following(False) or report_gaps()),
    ]

    def report_gaps():
        gaps = sorted(GAPS["gaps"])
        say(
            frame_gaps={
                "count": len(gaps),
                "max_ms": round(gaps[-1] * 1000, 1),
                "p99_ms": round(gaps[int(len(gaps) * 0.99) - 1] * 1000, 1),
                "addon_max_ms": round(WORK["max"] * 1000, 1),
            }
        )
        return True

    def tick():
        try:
            if time.monotonic() > DEADLINE:
                raise TimeoutError(f"step {steps[state['step']][0]} never ended")
            name, step = steps[state["step"]]
            state["tries"] += 1
            if step():
                objects = sorted(o.name for o in bpy.data.objects)
                say(step=name, error=session.error, notice=session.notice, objects=objects)
                state["step"] += 1
                state["tries"], state["since"] = 0, time.monotonic()
                if state["step"] == len(steps):
                    say(done=True, run=session.run, approvals=session.approvals, door=state["door"])
                    bpy.ops.wm.quit_blender()
                    return None
            return 0.3
        except Exception as exc:  # noqa: BLE001 - the test reads it; Blender quits either way
            say(failed=f"{type(exc).__name__}: {exc}", error=session.error)
            window, _, _ = view3d()
            with bpy.context.temp_override(window=window):
                bpy.ops.screen.screenshot(filepath=f"{OUT}/failure.png")
            bpy.ops.wm.quit_blender()
            return None

    # Persistent: a pull opens the pulled file, which would end a timer that is not.
    bpy.app.timers.register(tick, first_interval=1.0, persistent=True)
    bpy.app.timers.register(sample_gaps, first_interval=1.0, persistent=True)


main()
