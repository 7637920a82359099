"""What each operator does: read the session, hand network work to the worker, and
apply its answer on Blender's thread. Operators and the timer call these; the panel
reads ``SESSION``.
"""

import time
from collections.abc import Callable
from typing import Any

import bpy

from . import blendheader, content, files, replaying, shot_libraries, view
from .gateway import Gateway, GatewayError, check_scene_id
from .prefs import preferences
from .session import Session, Synced
from .worker import Worker

SESSION = Session()
WORKER = Worker(broken=SESSION.failed)
FOLLOW_EVERY = 3.0  # seconds between looks at the scene while idle
TICK_EVERY = 0.2  # seconds between the timer's ticks while nothing is under way
TICK_BUSY = 0.05  # and while the worker has a job out
_last_follow = 0.0
_deferred: list[Callable[[Any], Any]] = []


def defer(action: Callable[[Any], Any]) -> None:
    """Run ``action(bpy.context)`` at the timer's next tick, outside the operator.

    Blender saves the running operator with the file, so a copy saved inside one differs
    from a copy saved outside: every copy the digests compare is saved from the timer.
    """
    if len(_deferred) < 8:
        _deferred.append(action)


def gateway(context: Any) -> Gateway:
    prefs = preferences(context)
    return Gateway(prefs.gateway_url, prefs.token)


def scene_id(context: Any) -> str:
    return check_scene_id(context.scene.blendmesh_scene or files.default_scene_id())


def _begin(context: Any, what: str) -> tuple[Gateway, str] | None:
    """The gateway and scene id, or None with the reason in the panel."""
    replaying.check(SESSION)  # before anything reads the session's fingerprint
    if not WORKER.idle:
        SESSION.failed("wait for the request that runs to end")
        return None
    try:
        gw, scene = gateway(context), scene_id(context)
    except GatewayError as exc:
        SESSION.failed(str(exc))
        return None
    SESSION.start(what)
    return gw, scene


def _head_revision(gw: Gateway, scene: str) -> int:
    revisions = gw.history(scene, limit=1)
    return int(revisions[-1]["revision"]) if revisions else 0


def _ended(
    scene: str, answer: dict[str, Any], revision: int, brought: replaying.Brought | None = None
) -> None:
    """A run answer, and the scene's head revision once it ended; ``brought``: the run,
    fetched with the answer to come into the session now (``replaying.ran_here``)."""
    SESSION.ran(answer, scene)
    if answer.get("status") == "awaiting_confirmation":
        return
    SESSION.approvals = [a for a in SESSION.approvals if a.get("runId") != answer.get("runId")]
    ours = answer.get("runId") == SESSION.push_run_id
    if ours and answer.get("status") == "completed":
        # The import ran: the mesh's head is now the file as the push sent it.
        SESSION.synced = Synced(scene, revision, SESSION.pushed_digest)
        SESSION.notice = f"Pushed as revision {revision} of scene {scene}."
    elif answer.get("status") == "completed" and answer.get("scenePath"):
        if _live():
            where = "coming into your session"
        else:
            where = "in a newer Blender" if SESSION.too_new else "here: Pull brings it in"
        SESSION.notice += f" Revision {revision} is {where}."
    if brought is not None and not ours:  # the session's own push is its content already
        SESSION.tried = (scene, revision)
        replaying.applied(SESSION, scene, *brought)
    follow_now()


# -- push ----------------------------------------------------------------------------


def push(context: Any) -> bool:
    begun = _begin(context, "pushing the open file")
    if begun is None:
        return False
    gw, scene = begun
    context.scene.blendmesh_scene = scene  # the link travels with the file
    try:
        # A shot's libraries travel with it (docs/studio.md): found here, read on the worker.
        libraries = shot_libraries.gathered()
    except shot_libraries.LibraryProblem as exc:
        SESSION.failed(str(exc))
        return False
    SESSION.changed_locally = False
    data = shot_libraries.saved(libraries)
    SESSION.pushed_digest = content.fingerprint()

    def job(progress: Any) -> tuple[dict[str, Any], dict[str, Any] | None, int]:
        status, answer = shot_libraries.send(gw, scene, data, libraries)
        progress(view.sent(gw.sent, len(data)))
        run, approval = answer["run"], answer.get("approval")
        return run, approval, _head_revision(gw, scene) if status == 200 else 0

    def done(result: tuple[dict[str, Any], dict[str, Any] | None, int]) -> None:
        run, approval, revision = result
        SESSION.pushed_bytes = gw.sent
        SESSION.push_run_id = run.get("runId", "")
        if approval:
            SESSION.approvals = [approval, *SESSION.approvals]
        _ended(scene, run, revision)

    WORKER.submit(job, done, SESSION.failed, SESSION.add_progress)
    return True


# -- ask, approve, reject --------------------------------------------------------------


def ask(context: Any, prompt: str) -> bool:
    if not prompt.strip():
        SESSION.failed("type a request first, e.g. 'add a cube named Box at 0 0 1'")
        return False
    begun = _begin(context, "asking: " + prompt.strip()[:60])
    if begun is None:
        return False
    gw, scene = begun
    SESSION.progress = []
    chosen = view.focus(context)
    changes = _changes_first(context, scene)
    if changes is False:
        return False
    imported: list[int] = []  # the revision the artist's changes became, pushed first
    held = _held(scene)

    def job(progress: Any) -> tuple[Any, ...]:
        if isinstance(changes, bytes):  # the artist's edits become their own revision first
            status, pushed = gw.import_blend(scene, changes)
            if status != 200 or pushed["run"].get("status") != "completed":
                return "pushed", pushed, 0, None
            imported.append(_head_revision(gw, scene))
            progress(f"pushed your changes as revision {imported[0]}")
            progress(view.sent(gw.sent, len(changes)))
        answer = gw.run(scene, prompt.strip(), progress, chosen)
        waiting = answer.get("status") == "awaiting_confirmation"
        approvals = gw.pending() if waiting else []
        revision = 0 if waiting else _head_revision(gw, scene)
        base = imported[0] if imported and held else held
        return answer, approvals, revision, replaying.ran_here(gw, scene, answer, revision, base)

    def done(result: tuple[Any, ...]) -> None:
        if result[0] == "pushed":
            _pushed_first(scene, result[1])
            return
        answer, approvals, revision, brought = result
        if imported:
            SESSION.synced = Synced(scene, imported[0], SESSION.pushed_digest)
        asked = [a for a in approvals if a.get("runId") == answer.get("runId")]
        SESSION.approvals = asked + [a for a in SESSION.approvals if a not in asked]
        _ended(scene, answer, revision, brought)

    WORKER.submit(job, done, SESSION.failed, SESSION.add_progress)
    return True


def _held(scene: str) -> int:
    """The revision the session holds of ``scene`` when its runs come in live; 0 when
    they do not (not synced with the scene, or live edits off)."""
    synced = SESSION.synced
    if synced is None or synced.scene_id != scene or not _live():
        return 0
    return synced.revision


def _changes_first(context: Any, scene: str) -> bytes | bool | None:
    """The open file to push before the request, when the artist changed the scene since
    the last sync (None: nothing to push); False when the request is refused for it."""
    synced = SESSION.synced
    if synced is None or synced.scene_id != scene:
        return None  # never synced: the request plans on the mesh's scene, as it is
    now = content.fingerprint()
    if not SESSION.local_changes(scene, now):
        return None
    if preferences(context).before_ask == "REFUSE":
        SESSION.failed(
            f"You changed the scene since revision {synced.revision}, and the request "
            "would not see it: push your changes first (or set Before asking to push "
            "them in the add-on's preferences)"
        )
        return False
    SESSION.pushed_digest = now
    return files.saved_copy()


def _pushed_first(scene: str, pushed: dict[str, Any]) -> None:
    """The artist's changes were pushed before the request and wait for approval: the
    request waits for them."""
    run, approval = pushed["run"], pushed.get("approval")
    SESSION.push_run_id = run.get("runId", "")
    if approval:
        SESSION.approvals = [approval, *SESSION.approvals]
    SESSION.ran(run, scene)
    if run.get("status") == "awaiting_confirmation":
        SESSION.notice = (
            "Your changes were pushed first and wait for your approval below; once "
            "approved, Ask again: the request then plans on them."
        )


def resolve(context: Any, approval_id: str, decision: str) -> bool:
    approval = next((a for a in SESSION.approvals if a["approvalId"] == approval_id), None)
    if approval is None:
        SESSION.failed(f"no approval {approval_id[:40]} waits here; it may have been resolved")
        return False
    verb = "rejecting" if decision == "reject" else "approving"
    begun = _begin(context, f"{verb} run {approval.get('runId')}")
    if begun is None:
        return False
    gw, scene = begun
    held = _held(scene)

    def job(progress: Any) -> tuple[dict[str, Any], int, replaying.Brought | None]:
        answer = gw.resolve(approval, decision)
        revision = _head_revision(gw, scene)
        return answer, revision, replaying.ran_here(gw, scene, answer, revision, held)

    def done(result: tuple[dict[str, Any], int, replaying.Brought | None]) -> None:
        _ended(scene, *result)

    WORKER.submit(job, done, SESSION.failed, SESSION.add_progress)
    return True


def cancel(context: Any, run_id: str) -> bool:
    """Cancel a run shown here: the mesh ends it and keeps nothing of it."""
    begun = _begin(context, f"cancelling run {run_id}")
    if begun is None:
        return False
    gw, scene = begun

    def job(progress: Any) -> tuple[dict[str, Any], int]:
        answer = gw.cancel(run_id, "cancelled in Blender")
        return answer, _head_revision(gw, scene)

    def done(result: tuple[dict[str, Any], int]) -> None:
        _ended(scene, *result)

    WORKER.submit(job, done, SESSION.failed, SESSION.add_progress)
    return True


# -- pull -----------------------------------------------------------------------------


def pull(context: Any, keep_copy: bool = False) -> bool:
    """Bring the scene's head revision into the session. When the artist changed the open
    file since the last push or pull, nothing is replaced: the panel offers to push first,
    to keep a copy of theirs and pull (``keep_copy``), or to keep it and stop."""
    begun = _begin(context, "checking the open file")
    if begun is None:
        return False
    gw, scene = begun
    # Every part hashed again: a pull replaces the session, so no change may hide in a
    # part kept from before (a script's edit that told the depsgraph nothing).
    now = content.fingerprint(full=True)
    if SESSION.local_changes(scene, now):
        if not keep_copy:
            SESSION.busy, SESSION.changed_locally = "", True
            return False
        aside = files.keep_aside(scene, files.saved_copy())
        SESSION.notice = f"Kept your version as {aside}."
    SESSION.busy, SESSION.changed_locally = f"pulling scene {scene}", False
    running = (bpy.app.version[0], bpy.app.version[1])
    newer: list[str] = []  # the Blender that saved a revision this one cannot open

    def job(progress: Any) -> tuple[bytes, int]:
        blend, scene_hash = gw.blend(scene)
        for entry in reversed(gw.history(scene, limit=20)):
            if scene_hash.startswith(str(entry.get("sceneHashPrefix"))):
                revision = int(entry["revision"])
                why = blendheader.unreadable(blend, running)
                if why:  # refused before anything is written: the session stays as it is
                    newer.append("{}.{}".format(*(blendheader.saved_by(blend) or ("?", "?"))))
                    raise GatewayError(
                        f"cannot pull revision {revision} of scene {scene}: {why}. Your "
                        "session is as it was; open the revision in a newer Blender"
                    )
                return blend, revision
        raise GatewayError(f"scene {scene} changed while it was pulled; pull again")

    def done(result: tuple[bytes, int]) -> None:
        _pulled(scene, now, *result)

    def failed(message: str) -> None:
        SESSION.failed(message)
        SESSION.too_new = newer[0] if newer else ""  # stop offering what cannot work

    WORKER.submit(job, done, failed, SESSION.add_progress)
    return True


def _pulled(scene: str, checked: str, data: bytes, revision: int) -> None:
    # The artist may have worked on while the file came: check again before replacing.
    if content.fingerprint(full=True) != checked:
        SESSION.busy, SESSION.changed_locally = "", True
        return
    kept = SESSION.notice
    path = files.open_pulled(scene, data)
    bpy.context.scene.blendmesh_scene = scene
    SESSION.synced = Synced(scene, revision, content.fingerprint())
    SESSION.busy = ""
    SESSION.notice = f"Pulled revision {revision} of scene {scene} into {path}."
    if kept:
        SESSION.notice += f" {kept}"
    SESSION.newer = [r for r in SESSION.newer if int(r.get("revision", 0)) > revision]


def keep(context: Any = None) -> None:
    SESSION.changed_locally = False
    SESSION.notice = "Kept your changes; nothing was pulled."


# -- follow and the timer ------------------------------------------------------------


def _live() -> bool:
    try:
        return bool(preferences(bpy.context).live)
    except KeyError:  # the add-on is being disabled
        return False


def follow_now() -> None:
    global _last_follow
    _last_follow = 0.0


def follow(context: Any) -> None:
    """Look at the scene: newer revisions, runs on it and approvals waiting, through
    whichever door they came."""
    global _last_follow
    _last_follow = time.monotonic()
    try:
        gw, scene = gateway(context), scene_id(context)
    except GatewayError:
        return  # not set up yet: the operators say what is missing when used

    known = SESSION.user if SESSION.user_at == (gw.url, gw.token_hash()) else ""

    def job(progress: Any) -> tuple[str, list[Any], list[Any], list[Any]]:
        user = known or str(gw.me().get("user", ""))  # asked once per gateway and token
        return user, gw.history(scene, limit=20), gw.runs()[:50], gw.pending()

    def done(result: tuple[str, list[Any], list[Any], list[Any]]) -> None:
        SESSION.reached()
        SESSION.user, SESSION.user_at = result[0], (gw.url, gw.token_hash())
        SESSION.followed(scene, *result[1:])
        if _live():
            replaying.start(gw, scene, SESSION, WORKER)

    WORKER.submit(job, done, SESSION.follow_failed, SESSION.add_progress)


def tick() -> float:
    """The timer: apply what the worker finished, look at the scene now and then; redraw
    the panel only when what it shows changed."""
    before = SESSION.shown()
    # What the last replay left for the tick after it, then what the worker finished.
    handled = int(replaying.check(SESSION)) + WORKER.drain()
    context = bpy.context
    while _deferred and WORKER.idle:  # after a look at the scene that is under way
        _deferred.pop(0)(context)
        handled += 1
    linked = bool(getattr(context.scene, "blendmesh_scene", ""))
    try:
        wanted = preferences(context).follow
    except KeyError:  # the add-on is being disabled
        return FOLLOW_EVERY
    if linked and wanted and WORKER.idle and time.monotonic() - _last_follow > FOLLOW_EVERY:
        follow(context)
    if handled and SESSION.shown() != before:
        view.redraw()
    # While a job is out, its answer is looked for often: each tick it waits for adds to
    # the time a run takes to show, and a tick that finds nothing costs microseconds.
    return TICK_EVERY if WORKER.idle else TICK_BUSY
