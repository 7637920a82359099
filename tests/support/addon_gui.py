"""The blendmesh add-on in Blender's own window, for the GUI test (tests/e2e/test_addon_gui.py).

Run by a real Blender with a window (under Xvfb in CI) and ``--enable-event-simulate``:
``blender --factory-startup --enable-event-simulate --python tests/support/addon_gui.py -- ZIP
GATEWAY_URL TOKEN OUTPUT_DIR SCENE``. It installs the zip as a classic add-on, opens the
sidebar on the blendmesh tab, pushes the startup scene, pulls it back untouched (refused
by name: the mesh's Blender 5 saved the revision), asks for a cube, takes a screenshot
once the request completed, asks to delete it, takes one while the approval
waits, and quits. Every step runs from timers, as the add-on's own work does; each
finding is printed as a ``@@`` JSON line for the test to read.
"""

import json
import sys
import time

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


def show_tab(tries):
    """Click down the sidebar's tab strip, as an artist would (Blender 3.4 has no property
    for the active tab), until blendmesh's panel draws: tabs are in the order they were
    registered, so the last one hit is blendmesh's; clicks past the last tab hit nothing."""
    if DRAWN["at"] or tries > 30:
        return True
    window, area, sidebar = view3d()
    x, y = sidebar.x + sidebar.width - 9, sidebar.y + sidebar.height - 30 - 15 * tries
    window.event_simulate(type="MOUSEMOVE", value="NOTHING", x=x, y=y)
    window.event_simulate(type="LEFTMOUSE", value="PRESS", x=x, y=y)
    window.event_simulate(type="LEFTMOUSE", value="RELEASE", x=x, y=y)
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


def following(on):
    GAPS["on"], GAPS["last"] = on, 0.0
    return True


def screenshot(name):
    window, area, _ = view3d()
    with bpy.context.temp_override(window=window, area=area):
        bpy.ops.screen.screenshot_area(filepath=f"{OUT}/{name}")
    say(screenshot=name)


def main():
    addon = install()
    session, worker = addon.actions.SESSION, addon.actions.WORKER
    state = {"step": 0, "tries": 0, "since": time.monotonic()}

    def idle():
        return worker.idle and not session.busy

    def refused_as_newer():
        if session.changed_locally:
            raise AssertionError("the pull took the untouched session for a changed one")
        named = "cannot open files from a newer Blender" in session.error
        return named and session.too_new == "5.0"

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
        ("ask", lambda: prompt("add a cube named Box at 0 0 2") or True),
        ("asked", lambda: idle() and (session.run or {}).get("status") == "completed"),
        ("settle", lambda: time.monotonic() - state["since"] > 1.5),
        ("shot-completed", lambda: screenshot("panel-request-completed.png") or True),
        ("delete", lambda: prompt("delete Box") or True),
        ("waiting", lambda: idle() and bool(session.approvals)),
        ("settle2", lambda: time.monotonic() - state["since"] > 1.5),
        ("shot-approval", lambda: screenshot("panel-approval-waiting.png") or True),
        # Idle with follow on (a look at the scene every 3 s): how long frames wait.
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
                say(step=name, error=session.error, notice=session.notice)
                state["step"] += 1
                state["tries"], state["since"] = 0, time.monotonic()
                if state["step"] == len(steps):
                    say(done=True, run=session.run, approvals=session.approvals)
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
