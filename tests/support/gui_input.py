"""Real pointer and key events for the add-on's GUI test, and where in the window to send them.

Every event comes from the X server (xdotool), as a mouse's and a keyboard's do. Blender
3.4 tells Python nowhere where a button is drawn, so a button is found as a person at the
keyboard could find it: the pointer rests on a spot and Ctrl-C is pressed, and Blender
copies the button under the pointer to the clipboard — an operator button its Python
command (``bpy.ops.blendmesh.approve(approval_id="...")``), a text field its text. A spot
that copies nothing holds a label, a box's edge, a password or the viewport. A click lands
in the middle of the spots that copied what was looked for, after one more look there.

A watcher (a modal operator that passes every event on) counts the events Blender has
handled, so every wait is for Blender, never a fixed sleep. The functions that drive
input are generators: each ``yield`` hands Blender's thread back until the test's timer
calls again (``yield from`` them inside a step).
"""

import subprocess
import time
from collections import deque
from collections.abc import Callable, Iterator

import bpy

NOTHING = "@@ nothing was copied @@"  # the clipboard before each look
STEP = 12  # pixels between looks down the sidebar: under a button's height (20 at scale 1)
FINE = 4  # pixels between looks for a found button's edges
WAIT = 30.0  # seconds Blender may take to handle events sent, on CI's loaded cores
TABS = 22  # the sidebar's tab strip at its right edge, in pixels


def xdo(*args):
    """xdotool: real pointer and key events from the X server."""
    done = subprocess.run(["xdotool", *map(str, args)], capture_output=True, text=True, timeout=10)
    if done.returncode != 0:
        raise RuntimeError(f"xdotool {' '.join(map(str, args))}: {done.stderr.strip()}")
    return done.stdout


def view3d():
    """The main window, its largest 3D view, and that view's sidebar."""
    window = bpy.context.window_manager.windows[0]
    area = max((a for a in window.screen.areas if a.type == "VIEW_3D"), key=lambda a: a.width)
    sidebar = next(r for r in area.regions if r.type == "UI")
    return window, area, sidebar


def left(sidebar):
    """An x inside every button of the panel: a full row's, or a split row's left half."""
    return sidebar.x + 40


def right(sidebar):
    """An x inside a split row's right half (Pull beside Push)."""
    return sidebar.x + (sidebar.width - TABS) * 3 // 4


_origin: list[tuple[int, int, int]] = []  # the X window's left, top and height


def on_screen(x, y):
    """Blender's window coordinates (from its bottom left) as the X screen's (top left)."""
    window = bpy.context.window_manager.windows[0]
    if not _origin:
        found = [w for w in xdo("search", "--onlyvisible", "--name", "Blender").split() if w]
        geometry = {}
        for line in xdo("getwindowgeometry", "--shell", found[-1]).splitlines():
            key, _, value = line.partition("=")
            geometry[key] = int(value)
        _origin.append((geometry["X"], geometry["Y"], geometry["HEIGHT"]))
    x0, y0, height = _origin[0]
    return x0 + x, y0 + height - (y - window.y)


def pointer_to(x, y):
    xdo("mousemove", *on_screen(x, y))


# -- the watcher ----------------------------------------------------------------------

EVENTS: deque = deque(maxlen=256)  # (number, type, value) of each event Blender handled
_count = [0]
UNWATCHED = {"TIMER", "TIMER_REPORT", "TIMERREGION", "INBETWEEN_MOUSEMOVE", "NONE"}


class GUI_TEST_OT_watch(bpy.types.Operator):
    """Note each event Blender handles, and pass it on untouched."""

    bl_idname = "gui_test.watch"
    bl_label = "Watch Events"

    def invoke(self, context, event):
        context.window_manager.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        if event.type not in UNWATCHED:
            _count[0] += 1
            EVENTS.append((_count[0], event.type, event.value))
        return {"PASS_THROUGH"}


def watch():
    """Start the watcher in the main window, in front of the window's other handlers."""
    bpy.utils.register_class(GUI_TEST_OT_watch)
    window, area, sidebar = view3d()
    with bpy.context.temp_override(window=window, area=area, region=sidebar):
        bpy.ops.gui_test.watch("INVOKE_DEFAULT")
    return True


def mark():
    return _count[0]


def handled(since, kind, value="PRESS"):
    """Whether Blender handled an event ``kind`` (``"C"``, ``"LEFTMOUSE"``) after ``since``."""
    return any(n > since and t == kind and v == value for n, t, v in EVENTS)


def until(done: Callable[[], bool], what: str, limit: float = WAIT) -> Iterator[None]:
    start = time.monotonic()
    while not done():
        if time.monotonic() - start > limit:
            raise TimeoutError(f"{what}: not within {limit:g} s")
        yield


# -- finding, clicking and typing ----------------------------------------------------


LOOKS = [0]  # how many looks the test took, for its timings


def copied(x, y):
    """What Ctrl-C copies with the pointer on (x, y): NOTHING where no button is."""
    wm = bpy.context.window_manager
    wm.clipboard = NOTHING
    since = mark()
    LOOKS[0] += 1
    xdo("mousemove", *on_screen(x, y), "key", "ctrl+c")  # one xdotool, two events
    # Ctrl is let go after C: once Blender handled that, it handled the copy.
    yield from until(
        lambda: handled(since, "C") and handled(since, "LEFT_CTRL", "RELEASE"),
        f"Blender handling Ctrl-C at {x},{y}",
    )
    return wm.clipboard


WALKS = 3  # walks down the sidebar before a button counts as missing


def find(wants: Callable[[str], bool], x, what, top=None):
    """The middle (x, y) of the first button down the sidebar from ``top`` whose copy
    ``wants`` accepts. A walk that missed it walks again a third of a step lower: on a
    loaded machine Blender now and then handles Ctrl-C before the button under the
    pointer has lit up, and copies nothing."""
    _, _, sidebar = view3d()
    seen: list[str] = []  # what was copied on the way, for the error
    for walk in range(WALKS):
        y = (sidebar.y + sidebar.height - 4 if top is None else top) - walk * STEP // WALKS
        found = None
        while y > sidebar.y + 4:
            copy = yield from copied(x, y)
            if wants(copy):
                found = y
                break
            if copy != NOTHING and (not seen or not seen[-1].endswith(f" {copy[:60]!r}")):
                seen.append(f"y {y}: {copy[:60]!r}")
            y -= STEP
        if found is not None:
            break
    else:
        said = "; ".join(seen) or "nothing"
        raise LookupError(f"no {what} down the sidebar at x {x} in {WALKS} walks; copied: {said}")
    upper = lower = y
    while upper - y < STEP * 2 and wants((yield from copied(x, upper + FINE))):
        upper += FINE
    while y - lower < STEP * 2 and wants((yield from copied(x, lower - FINE))):
        lower -= FINE
    return x, (upper + lower) // 2


KNOWN: dict[str, tuple[int, int]] = {}  # where each button was last found, by name


def spot(wants: Callable[[str], bool], x, what, top=None):
    """Where the button ``wants`` accepts is now, looked at there: where it was last
    found (one look, as the panel mostly stays put), else found anew down the sidebar."""
    for _ in range(3):  # the panel may grow a line between two looks
        at = KNOWN.get(what)
        if at is not None and at[0] == x and wants((yield from copied(*at))):
            return at
        at = KNOWN[what] = yield from find(wants, x, what, top)
        if wants((yield from copied(*at))):
            return at
    raise LookupError(f"{what} moved each time it was about to be clicked")


def click(wants: Callable[[str], bool], x, what, top=None):
    """Click the button ``wants`` accepts, as a mouse does; where it was clicked."""
    at = yield from spot(wants, x, what, top)
    yield from press(at, what)
    return at


def press(at, what):
    """A left click at ``at``, once Blender has taken its press."""
    since = mark()
    pointer_to(*at)
    xdo("click", 1)
    yield from until(lambda: handled(since, "LEFTMOUSE"), f"Blender taking the click on {what}")


def type_at(at, text, what, typed: Callable[[], bool]):
    """Click the text field at ``at``, select what it holds, type ``text`` and press
    Enter; done once ``typed()`` says the field holds it."""
    # The press starts editing as Blender handles it: the keys after it are the field's.
    yield from press(at, what)
    xdo("key", "ctrl+a")
    xdo("type", "--delay", "15", text)
    xdo("key", "Return")
    yield from until(typed, f"{what} at {at} holding {text!r} once typed")
