"""Bringing the scene's newer revisions into the open session by replaying their runs.

The worker fetches each newer revision's run (its operations, as they ran) and the
mesh's summary of the head; Blender's thread then replays them oldest first (``live``),
each as its own undo step, and compares the session with the summary. Nothing is
replayed over changes the artist made since the last sync, after a revision that cannot
be replayed here, or from a run the token's user did not make (the gateway answers 404).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import bpy

from . import content, live
from .gateway import Gateway, GatewayError
from .session import Session, Synced, undo_label, unreplayable
from .tools import ToolFailure
from .worker import Worker

Fetched = list[tuple[int, dict[str, Any]]]
# The runs fetched, why the fetch stopped ('' when it did not), the head's summary.
Brought = tuple[Fetched, str, dict[str, Any] | None]
# A revision's run is recorded just after the revision is stored: a look at the scene in
# between finds none. Looked for again this many times before the panel offers a pull.
UNRECORDED = "has no run on record"
MAX_UNRECORDED = 5


def start(gw: Gateway, scene: str, session: Session, worker: Worker) -> bool:
    """Fetch and replay what is newer than the session's revision; False when nothing is."""
    entries = session.to_replay(scene)
    if not entries:
        return False
    head = int(entries[-1]["revision"])
    session.tried = (scene, head)

    def job(progress: Any) -> Brought:
        return fetch(gw, scene, entries)

    def done(result: Brought) -> None:
        applied(session, scene, *result)

    def failed(message: str) -> None:
        session.error = f"cannot bring revision {head} into the session: {message}"

    worker.submit(job, done, failed, session.add_progress)
    return True


def fetch(gw: Gateway, scene: str, entries: list[dict[str, Any]]) -> Brought:
    """On the worker: each entry's run as it ran, oldest first, and the mesh's summary of
    the scene; the fetch stops at the first run that is not there to replay, saying why."""
    fetched: Fetched = []
    for entry in entries:
        run_id = entry.get("runId")
        if not run_id:
            return fetched, f"revision {entry.get('revision')} {UNRECORDED}", None
        try:
            fetched.append((int(entry["revision"]), gw.operations(str(run_id))))
        except GatewayError as exc:
            if exc.status != 404:
                raise
            who = entry.get("user") or "another user"
            return fetched, f"revision {entry.get('revision')} was made by {who}", None
    return fetched, "", gw.summary(scene)


def ran_here(
    gw: Gateway, scene: str, answer: dict[str, Any], revision: int, held: int
) -> Brought | None:
    """On the worker, right after a run this session asked for or approved ended: when it
    made the revision after ``held`` (the one the session holds), its operations and the
    summary, fetched at once, so the run comes into the session without waiting for the
    next look at the scene; None when the run made no revision right after ``held``."""
    if answer.get("status") != "completed" or not held or revision != held + 1:
        return None
    run_id = str(answer.get("runId") or "")
    try:
        return fetch(gw, scene, [{"revision": revision, "runId": run_id}])
    except GatewayError:
        return None  # the run ended all the same; the next look at the scene brings it


def applied(
    session: Session, scene: str, runs: Fetched, stopped: str, summary: dict[str, Any] | None
) -> None:
    """On Blender's thread: replay ``runs`` oldest first, then check against ``summary``."""
    if UNRECORDED in stopped and session.unrecorded < MAX_UNRECORDED:
        session.unrecorded += 1
        session.tried = (scene, 0)  # the next look fetches the rest again
        stopped = ""
        if not runs:
            return
    elif not stopped:
        session.unrecorded = 0
    synced = session.synced
    if synced is None or synced.scene_id != scene or not runs:
        _offer_pull(session, runs[0][0] if runs else 0, stopped)
        return
    if getattr(bpy.context, "mode", "OBJECT") != "OBJECT":
        # Edit and paint modes keep their own undo steps and their own copy of the data:
        # a replay there would be lost on leaving the mode, and its undo would undo theirs.
        session.tried = (scene, 0)  # tried again at the next look, once back
        session.notice = (
            f"Revision {runs[-1][0]} is on the mesh: it comes into your session once you "
            "are back in Object Mode."
        )
        return
    check(session)  # a replay's check still left: done first, it settles the digest
    if session.local_changes(scene, content.fingerprint()):
        session.notice = (
            f"Revision {runs[-1][0]} is on the mesh, but you changed the scene since "
            f"revision {synced.revision}: push your changes, or pull (yours is kept aside)."
        )
        return
    said, at, whole = [], synced.revision, True
    for revision, ran in runs:
        why = unreplayable(ran)
        if revision != at + 1:
            why = f"the session holds revision {at}"
        if why:
            _offer_pull(session, revision, why)
            whole = False
            break
        try:
            live.replay(ran)
        except ToolFailure as exc:
            session.error = (
                f"Revision {revision} could not be replayed here ({exc.message}); your "
                "session is as it was. Pull brings it in."
            )
            whole = False
            break
        at = revision
        session.newer = [r for r in session.newer if int(r.get("revision", 0)) > revision]
        said.append(f"revision {revision} ({undo_label(ran)[11:]})")
    if whole:
        session.notice = f"In your session: {', '.join(said)}. Ctrl-Z undoes it."
        if stopped:
            _offer_pull(session, runs[-1][0] + 1, stopped)
    if not said:
        return
    # The session holds ``at`` now; its fingerprint and the comparison with the mesh come
    # at the next tick, so Blender draws the change first (ADR 0071). Until then the
    # digest is unknown, which reads as a local change: nothing is pulled over it.
    session.synced = Synced(scene, at, "")
    compare = whole and not stopped and summary is not None and summary.get("revision") == at
    _checks[:] = [_Check(scene, at, summary if compare else None, content.edits())]


@dataclass
class _Check:
    """What a replay left to do after Blender has drawn it: the session's fingerprint and
    its comparison with the mesh's summary of the revision it holds."""

    scene: str
    revision: int
    summary: dict[str, Any] | None
    edits: int  # content.edits() right after the replay


_checks: list[_Check] = []  # at most one: a newer replay replaces an older check


def checking() -> bool:
    """Whether a replay's check is left for the next tick."""
    return bool(_checks)


def check(session: Session) -> bool:
    """Finish the last replay's check, if one is left (True when one was): the timer's
    next tick calls this, and so does anything about to read the session's fingerprint
    before then."""
    if not _checks:
        return False
    left = _checks.pop()
    _compare(session, left)
    return True


def _compare(session: Session, left: _Check) -> None:
    synced = session.synced
    if synced is None or (synced.scene_id, synced.revision, synced.digest) != (
        left.scene,
        left.revision,
        "",
    ):
        return  # the session moved on (a pull, a push): nothing of this replay to check
    if content.edits(settled=True) != left.edits:
        # The artist changed the scene between the replay and now: the digest stays
        # unknown, so the change counts as theirs and is never taken for the mesh's.
        return
    session.synced = Synced(left.scene, left.revision, content.fingerprint())
    if left.summary is None:
        return
    wrong = live.differences(left.summary)
    if wrong:
        session.synced = Synced(left.scene, left.revision, "")  # not the mesh's: a local change
        session.error = (
            f"After the replay your session differs from revision {left.revision} on the "
            f"mesh: {'; '.join(wrong)}. Pull brings the mesh's version; Push makes yours "
            "the next revision."
        )


def _offer_pull(session: Session, revision: int, why: str) -> None:
    where = "open it in a newer Blender" if session.too_new else "Pull brings it in"
    session.notice = f"Revision {revision} cannot be replayed in this session: {why}; {where}."
