"""The blendmesh add-on in Blender's own window, for the GUI test (tests/e2e/test_addon_gui.py).

Run by a real Blender with a window (under Xvfb in CI), its pointer and keys driven by
xdotool (gui_input.py): ``blender --factory-startup --python tests/support/addon_gui.py --
ZIP GATEWAY_URL TOKEN OUTPUT_DIR SCENE CLI_JSON``. It installs the zip as a classic
add-on and opens the sidebar on the blendmesh tab; then, with clicks and typed keys only,
it pushes the startup scene, pulls it back untouched (refused by name: the mesh's Blender
5 saved the revision), adds an object by hand (the artist's own unsaved work) and types a
request into the panel's request box and clicks Ask (the hand-made change is pushed first,
and Approve is clicked for it), sees the cube arrive in the open session without a reload,
presses Ctrl-Z and Ctrl-Shift-Z, sees runs made through other doors arrive (the
``blendmesh`` CLI, the HTTP API), asks to delete the cube and clicks Approve, asks to
delete another object and clicks Cancel Run, records the main loop's frame gaps while
following, types a wrong token into the panel's Token field and pushes (the refusal named
in the panel), types the right one back, and pushes a file over the mesh's upload limit
(named too). Screenshots are taken on the way. The script only reads the add-on's state
to know when a step has ended; every step runs from a timer, as the add-on's own work
does, and each finding is printed as a ``@@`` JSON line for the test to read.
"""

import json
import os
import subprocess
import sys
import threading
import time
import urllib.request

import addon_utils
import bpy

# gui_input.py sits beside this script, which Blender runs by its path, not as a module.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gui_input as gui

ZIP, URL, TOKEN, OUT, SCENE, CLI = sys.argv[sys.argv.index("--") + 1 :][:6]
BEGUN = time.monotonic()
DEADLINE = BEGUN + 300
PUSH, PULL, ASK = (f"bpy.ops.blendmesh.{verb}()" for verb in ("push", "pull", "ask"))


def say(**finding):
    print("@@" + json.dumps(finding), flush=True)


def install():
    bpy.ops.preferences.addon_install(filepath=ZIP, overwrite=True)
    addon_utils.enable("blendmesh", default_set=True, handle_error=None)
    addon = sys.modules["blendmesh"]
    prefs = bpy.context.preferences.addons["blendmesh"].preferences
    prefs.gateway_url, prefs.token = URL, TOKEN
    bpy.context.scene.blendmesh_scene = SCENE
    # A tooltip opens under a button the pointer rests on for half a second, and on a
    # loaded machine a look can take that long: the next row's field, covered, copies
    # nothing. A person moves on; the test turns tooltips off.
    bpy.context.preferences.view.show_tooltips = False
    watch_panel()
    area = gui.view3d()[1]
    area.spaces.active.show_region_ui = True
    return addon


LONG_REQUEST = (
    "make the cone named Tip twice as tall, give it a brushed steel material and "
    "keyframe its rotation so it turns once between frame 1 and frame 48"
)
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
    """Click down the sidebar's tab strip with the pointer, as an artist would (Blender
    3.4 has no property for the active tab), until blendmesh's panel draws: tabs are in
    the order they were registered, so the last one hit is blendmesh's; clicks past the
    last tab hit nothing."""
    if DRAWN["at"] or tries > 30:
        return True
    _, area, sidebar = gui.view3d()
    gui.pointer_to(sidebar.x + sidebar.width - 9, sidebar.y + sidebar.height - 30 - 15 * tries)
    gui.xdo("click", 1)
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
    _, area, _ = gui.view3d()
    gui.pointer_to(area.x + area.width // 2, area.y + area.height // 2)
    gui.xdo("key", combo)
    return True


def http_door(prompt, answers):
    """A run on the scene through the HTTP API (as an MCP host or a script makes one),
    off Blender's thread as any other client is."""

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


def cli_door(prompt, answers):
    """A run on the scene made with the ``blendmesh`` CLI, as the same user, on the bus
    of the mesh the add-on talks to; off Blender's thread."""
    cli = json.loads(CLI)

    def run():
        env = {**os.environ, "NATS_URL": cli["nats"], "BLENDMESH_USER": cli["user"]}
        command = [*cli["command"], "run", "--json", "--scene", SCENE, prompt]
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=180)
        try:
            answers.append({"status": json.loads(done.stdout)["status"], "door": "cli"})
        except (ValueError, KeyError):
            answers.append({"status": f"exit {done.returncode}: {done.stderr[-500:]}"})

    threading.Thread(target=run, daemon=True).start()
    return True


def hand_made(name, vertices=0):
    """An object the artist adds by hand (not on the mesh), one undo step, as Shift-A is;
    with ``vertices`` loose points, a heavy one."""
    mesh = bpy.data.meshes.new(name)
    mesh.vertices.add(vertices)
    ob = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(ob)
    bpy.ops.ed.undo_push(message=f"Add {name}")
    return True


def screenshot(name):
    """The whole window, the outliner's list of objects included, once the pointer has
    left the panel (a button under it is drawn as if it were held)."""
    window, area, _ = gui.view3d()
    since = gui.mark()
    gui.pointer_to(area.x + area.width // 3, area.y + area.height // 3)
    # Blender draws after it handles events, before its timers run again.
    yield from gui.until(lambda: gui.handled(since, "MOUSEMOVE", "NOTHING"), "the pointer")
    yield
    with bpy.context.temp_override(window=window):
        bpy.ops.screen.screenshot(filepath=f"{OUT}/{name}")
    say(screenshot=name)


# -- what the artist does with the pointer and the keys --------------------------------


def sidebar():
    return gui.view3d()[2]


def click(command, what, x=gui.left, top=None):
    """Click the button whose Python command is ``command``, or holds it, looking down
    the sidebar from ``top``."""
    yield from gui.click(lambda c: command in c, x(sidebar()), what, top)


def ask_for(text, shot=""):
    """Type ``text`` into the panel's request box and click Ask, the button under it."""
    field = yield from type_request(text, shot)
    yield from click(ASK, "Ask", top=field[1] - 4)


def type_request(text, shot=""):
    """Type ``text`` into the panel's request box; where the box is."""
    wm = bpy.context.window_manager
    x = gui.left(sidebar())
    field = yield from gui.spot(lambda c: c == wm.blendmesh_prompt, x, "request box")
    yield from gui.type_at(field, text, "the request box", lambda: wm.blendmesh_prompt == text)
    if shot:
        yield from screenshot(shot)
    return field


def below_ask():
    """Where to start looking for what the panel shows under Ask (an approval's buttons):
    Ask's last place, or the sidebar's top before it was found."""
    ask = gui.KNOWN.get("Ask")
    return None if ask is None else ask[1] - 4


def token_field():
    """Where the Token field is. Blender copies no password, so it is found as the row
    above the Scene field, one row pitch up: the pitch from the request box to Ask, the
    next rows of the same column. Each is found anew, and the Scene field looked at
    again just before: a click beside the field would send the token's letters to the
    viewport as shortcuts."""
    wm = bpy.context.window_manager
    x, field = gui.left(sidebar()), gui.right(sidebar())  # a labelled field is on the right
    scene = yield from gui.find(lambda c: c == SCENE, field, "Scene field")
    box = yield from gui.find(lambda c: c == wm.blendmesh_prompt, x, "request box", scene[1] - 8)
    ask = yield from gui.find(lambda c: c == ASK, x, "Ask", box[1] - 4)
    pitch = box[1] - ask[1]
    if not 18 <= pitch <= 40:
        raise LookupError(f"rows {pitch} pixels apart (request box {box}, Ask {ask})")
    token = (field, scene[1] + pitch)
    if (yield from gui.copied(*scene)) != SCENE or (yield from gui.copied(*token)) != gui.NOTHING:
        raise LookupError(f"the panel moved while the Token field was looked for ({token})")
    return token


def type_token(token):
    prefs = bpy.context.preferences.addons["blendmesh"].preferences
    field = yield from token_field()
    yield from gui.type_at(field, token, "the Token field", lambda: prefs.token == token)


def main():
    addon = install()
    session, worker = addon.actions.SESSION, addon.actions.WORKER
    # The timer calls these through the module: what they take is the add-on's work.
    worker.drain = timed(worker.drain)
    addon.actions.follow = timed(addon.actions.follow)
    state = {"step": 0, "tries": 0, "since": time.monotonic(), "door": [], "doing": None}

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

    def waiting_run():
        run = session.run or {}
        return str(run.get("runId", "")) if run.get("status") == "awaiting_confirmation" else ""

    def approve(run_id):
        """Click Approve in the box of the approval that waits for ``run_id``."""
        [approval] = [a for a in session.approvals if a.get("runId") == run_id]
        yield from gui.click(
            lambda c: "blendmesh.approve(" in c and approval["approvalId"] in c,
            gui.left(sidebar()),
            "Approve",
            below_ask(),
        )

    def cancel(run_id):
        yield from gui.click(
            lambda c: "blendmesh.cancel_run(" in c and run_id in c,
            gui.left(sidebar()),
            "Cancel Run",
            below_ask(),
        )

    def cancelled():
        run = session.run or {}
        return idle() and run.get("status") == "failed" and not session.approvals

    steps = [
        ("tab", lambda: show_tab(state["tries"])),
        ("watch", gui.watch),
        ("push", lambda: click(PUSH, "Push")),
        ("pushed", lambda: idle() and session.synced is not None),
        # Nothing touched since the push: a pull must recognise the session as unchanged
        # (Blender 3.4 saves it with other bytes each time, so a file digest never did),
        # then refuse the revision by name, since the mesh's Blender 5 saved it.
        ("pull-unchanged", lambda: click(PULL, "Pull", gui.right)),
        ("pull-refused", lambda: idle() and refused_as_newer()),
        ("hand-made", lambda: hand_made("Mine")),
        ("ask-first", lambda: ask_for("add a cube named Box at 0 0 2", "panel-request-typed.png")),
        # The hand-made change goes first, as its own revision, which waits for approval.
        ("pushed-first", lambda: idle() and "pushed first" in session.notice),
        ("approve-push", lambda: approve(session.push_run_id)),
        ("push-approved", lambda: idle() and session.synced.revision == 2),
        ("ask", lambda: click(ASK, "Ask")),  # the request is still in its box
        ("asked", lambda: idle() and at(3) and has("Box", "Mine") and not bpy.data.filepath),
        ("settle", lambda: time.monotonic() - state["since"] > 1.5),
        ("shot-completed", lambda: screenshot("panel-request-completed.png")),
        ("ctrl-z", lambda: keys("ctrl+z")),
        ("undone", lambda: "Box" not in bpy.data.objects and has("Mine")),
        ("ctrl-shift-z", lambda: keys("ctrl+shift+z")),
        ("redone", lambda: has("Box", "Mine")),
        ("cli-door", lambda: cli_door("add a cone named Tip at 2 0 0", state["door"])),
        ("door-ran", lambda: idle() and at(4) and has("Tip", "Box", "Mine")),
        ("door-light", lambda: http_door("add a sun light named Key at 0 0 5", state["door"])),
        ("light-came", lambda: idle() and at(5) and has("Key")),
        ("door-key", lambda: http_door("keyframe Tip location at frame 12", state["door"])),
        ("key-came", lambda: idle() and at(6) and animated("Tip")),
        ("delete", lambda: ask_for("delete Box")),
        ("waiting", lambda: idle() and bool(waiting_run()) and bool(session.approvals)),
        ("settle2", lambda: time.monotonic() - state["since"] > 1.5),
        ("shot-approval", lambda: screenshot("panel-approval-waiting.png")),
        ("approve", lambda: approve(waiting_run())),
        ("deleted", lambda: idle() and at(7) and "Box" not in bpy.data.objects),
        ("shot-deleted", lambda: screenshot("session-after-approval.png")),
        # A request longer than the one-line box is read back whole under it, in lines.
        ("long", lambda: type_request(LONG_REQUEST)),
        ("settle-long", lambda: time.monotonic() - state["since"] > 0.5),
        ("shot-long", lambda: screenshot("panel-long-request.png")),
        ("delete-tip", lambda: ask_for("delete Tip")),
        ("waiting-tip", lambda: idle() and bool(waiting_run()) and bool(session.approvals)),
        ("cancel", lambda: cancel(waiting_run())),
        ("cancelled", lambda: cancelled() and has("Tip") and at(7)),
        ("settle-cancel", lambda: time.monotonic() - state["since"] > 1.0),
        ("shot-cancelled", lambda: screenshot("panel-run-cancelled.png")),
        # Idle with follow on (a look at the scene every 3 s): how long frames wait, once
        # the screenshot's report in the status bar is gone.
        ("settle3", lambda: time.monotonic() - state["since"] > 3),
        ("follow-start", lambda: following(True)),
        ("follow-idle", lambda: time.monotonic() - state["since"] > 9.5),
        ("follow-end", lambda: not following(False) or report_gaps()),
        ("wrong-token", lambda: type_token("tok-wrong")),
        ("push-wrong", lambda: click(PUSH, "Push")),
        ("token-refused", lambda: idle() and "refused the token" in session.error),
        ("shot-token", lambda: screenshot("panel-token-refused.png")),
        ("right-token", lambda: type_token(TOKEN)),
        ("token-answered", lambda: idle() and session.error == "" and session.user != ""),
        ("heavy", lambda: hand_made("Heavy", 400_000)),
        ("push-heavy", lambda: click(PUSH, "Push")),
        ("too-large", lambda: idle() and "the gateway takes" in session.error),
        ("shot-too-large", lambda: screenshot("panel-file-too-large.png")),
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

    def advance():
        """Run the step on: True once it ended. A step that drives input is a generator,
        taken a bit further on each call; any other says whether it is done yet."""
        step = steps[state["step"]][1]
        if state["doing"] is None:
            state["tries"] += 1
            done = step()
            if not hasattr(done, "send"):
                return bool(done)
            state["doing"] = done
        try:
            next(state["doing"])
            return False
        except StopIteration:
            state["doing"] = None
            return True

    def tick():
        try:
            if time.monotonic() > DEADLINE:
                raise TimeoutError(f"step {steps[state['step']][0]} never ended")
            if advance():
                objects = sorted(o.name for o in bpy.data.objects)
                name = steps[state["step"]][0]
                at = round(time.monotonic() - BEGUN, 1)
                looks = gui.LOOKS[0]
                say(
                    step=name,
                    at=at,
                    looks=looks,
                    error=session.error,
                    notice=session.notice,
                    objects=objects,
                )
                state["step"] += 1
                state["tries"], state["since"] = 0, time.monotonic()
                if state["step"] == len(steps):
                    say(done=True, run=session.run, approvals=session.approvals, door=state["door"])
                    bpy.ops.wm.quit_blender()
                    return None
            return 0.02 if state["doing"] is not None else 0.3
        except Exception as exc:  # noqa: BLE001 - the test reads it; Blender quits either way
            name = steps[state["step"]][0]
            say(failed=f"{name}: {type(exc).__name__}: {exc}", error=session.error)
            window, _, _ = gui.view3d()
            with bpy.context.temp_override(window=window):
                bpy.ops.screen.screenshot(filepath=f"{OUT}/failure.png")
            bpy.ops.wm.quit_blender()
            return None

    # Persistent: a pull opens the pulled file, which would end a timer that is not.
    bpy.app.timers.register(tick, first_interval=1.0, persistent=True)
    bpy.app.timers.register(sample_gaps, first_interval=1.0, persistent=True)


main()
