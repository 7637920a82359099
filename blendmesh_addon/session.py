"""What the panel shows and what the add-on last synced, without Blender.

One ``Session`` lives as long as Blender does (opening a pulled file keeps it). The
worker thread never touches it: results come back to Blender's thread, which applies
them here and redraws the panel. ``synced`` holds the content fingerprint of the session
right after the last push or pull; a pull compares it with the session now, so a change the
artist made in between is never thrown away.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MAX_PROGRESS = 12  # lines of a run's progress the panel keeps
MAX_FOLLOWED = 8  # newer revisions and runs the panel lists
# The tools the open session replays (live.py runs their bodies); read-only ones change
# nothing, so a run of them and these is replayed whole.
REPLAYED = frozenset(
    [
        "object.create", "object.transform", "object.rename", "object.delete",
        "object.duplicate", "object.parent", "object.unparent", "material.assign",
        "light.create", "light.set", "camera.create", "camera.set", "camera.set_active",
        "keyframe.insert",
    ]
)  # fmt: skip
LOOKS = frozenset({"object.inspect", "scene.snapshot"})
UNREACHABLE = "cannot reach the blendmesh gateway"  # how gateway.py words either cause
REFUSED_TOKEN = "refused the token"


@dataclass
class Synced:
    """The revision the open file was last pushed as or pulled from."""

    scene_id: str
    revision: int
    digest: str  # the session's content fingerprint (content.py) right after


@dataclass
class Session:
    busy: str = ""  # what the worker does now, shown with a spinner-like label
    error: str = ""
    notice: str = ""
    progress: list[str] = field(default_factory=list)
    run: dict[str, Any] | None = None  # the last run answer (spec 002 run response)
    approvals: list[dict[str, Any]] = field(default_factory=list)  # waiting, this scene
    newer: list[dict[str, Any]] = field(default_factory=list)  # revisions past ``synced``
    others: list[dict[str, Any]] = field(default_factory=list)  # recent runs on the scene
    synced: Synced | None = None
    pushed_digest: str = ""  # the content a push sent, synced once its import ran
    push_run_id: str = ""  # the import run of the last push
    pushed_bytes: int = 0  # what the last push sent: only the chunks the mesh lacked
    changed_locally: bool = False  # a pull found local changes: push first, or keep
    user: str = ""  # who the token is, as the gateway said
    user_at: tuple[str, str] = ("", "")  # the gateway and token that said it
    too_new: str = ""  # the newer Blender ("5.0") the mesh's revisions are saved by
    tried: tuple[str, int] = ("", 0)  # the newest revision a replay looked at, per scene
    changes: list[str] = field(default_factory=list)  # what revision ``changes_of`` changed
    changes_of: tuple[str, int] = ("", 0)  # (scene, revision) the listed changes are of
    unrecorded: int = 0  # looks in a row that found a newer revision without its run

    def start(self, what: str) -> None:
        self.busy, self.error, self.notice = what, "", ""

    def failed(self, message: str) -> None:
        self.busy, self.error = "", message
        if REFUSED_TOKEN in message:  # nobody the panel can name any more, at once
            self.user = ""

    def add_progress(self, line: str) -> None:
        if line:
            self.progress = [*self.progress, line[:200]][-MAX_PROGRESS:]

    def ran(self, answer: dict[str, Any], scene_id: str) -> None:
        """A run answer (a request, an import, a resolution) arrived."""
        self.busy, self.run = "", answer
        status = answer.get("status")
        if status == "completed":
            self.notice = f"Completed: {answer.get('summary', '')}."
        elif status == "failed":
            failure = answer.get("failure") or {}
            self.error = f"Failed ({failure.get('errorCode', '?')}): {answer.get('summary', '')}"
        elif status == "awaiting_confirmation":
            self.notice = ""  # the approval's own box says it

    def followed(
        self,
        scene_id: str,
        history: list[dict[str, Any]],
        runs: list[dict[str, Any]],
        approvals: list[dict[str, Any]],
    ) -> None:
        """What the gateway says now of the scene, through whichever door it changed."""
        last = self.synced.revision if self.synced and self.synced.scene_id == scene_id else 0
        self.newer = [r for r in history if int(r.get("revision", 0)) > last][-MAX_FOLLOWED:]
        mine = [r for r in runs if r.get("sceneId") == scene_id]
        self.others = mine[:MAX_FOLLOWED]
        ids = {r.get("runId") for r in mine}
        self.approvals = [a for a in approvals if a.get("runId") in ids]

    def shown(self) -> tuple[Any, ...]:
        """What the panel draws: it is redrawn only when this changes."""
        return (
            self.busy, self.error, self.notice, tuple(self.progress), repr(self.run),
            repr(self.approvals), repr(self.newer), repr(self.others), self.synced,
            self.changed_locally, self.too_new, self.user, tuple(self.changes),
        )  # fmt: skip

    def listed_changes(self) -> list[str]:
        """The change list fetched for the revision the session holds now; none once the
        session moved to another revision (it would describe one it no longer has)."""
        synced = self.synced
        if synced is None or self.changes_of != (synced.scene_id, synced.revision):
            return []
        return self.changes

    def reached(self) -> None:
        """The gateway answered the token: an error that said it cannot be reached, or
        that it refused the token, is over."""
        if self.error.startswith(UNREACHABLE) or REFUSED_TOKEN in self.error:
            self.error = ""

    def follow_failed(self, message: str) -> None:
        """A look at the scene failed. A scene not pushed yet (404) is no error, and an
        error on show stays; a refused token is nobody the panel can name any more."""
        if REFUSED_TOKEN in message:
            self.user = ""
        if not self.error and "404" not in message:
            self.error = message

    def to_replay(self, scene_id: str) -> list[dict[str, Any]]:
        """The newer revisions a replay brings into the session, oldest first: each one
        past the last synced, once (a refused or failed replay is not tried again)."""
        synced = self.synced
        if synced is None or synced.scene_id != scene_id or not self.newer:
            return []
        head = int(self.newer[-1].get("revision", 0))
        tried = self.tried[1] if self.tried[0] == scene_id else 0
        return list(self.newer) if head > max(tried, synced.revision) else []

    def head(self) -> dict[str, Any] | None:
        return self.newer[-1] if self.newer else None

    def choices(self) -> tuple[str, str]:
        """What "Push My Changes First" and "Keep a Copy and Pull" each do to which
        revision, in words: a push of a stale file replaced a run's result unsaid."""
        head = self.head()
        if head is None:
            synced = self.synced.revision if self.synced else 0
            newest = f"revision {synced}" if synced else "the scene's head"
            return (
                f"Push: your file becomes the revision after {newest}.",
                f"Pull: {newest} replaces your file; a copy of yours is kept beside it.",
            )
        made = f"revision {head.get('revision')} by {head.get('user')}"
        tools = ", ".join(head.get("tools") or [])
        made += f" ({tools})" if tools else ""
        return (
            f"Push: your file replaces {made} as the head; it stays in the history "
            "(blendmesh revert brings it back).",
            f"Pull: {made} replaces your file; a copy of yours is kept beside it.",
        )

    def local_changes(self, scene_id: str, digest_now: str) -> bool:
        """Whether the open file differs from what was last pushed or pulled for
        ``scene_id``. A file never synced with the scene counts as changed: the artist's
        work in it is not on the mesh."""
        synced = self.synced
        return synced is None or synced.scene_id != scene_id or synced.digest != digest_now


MAX_CHANGE_LINES = 40  # lines of a change list the panel draws; the rest are counted


def shown_changes(listed: dict[str, Any]) -> list[str]:
    """A change list's text (``GET .../changes``), cut to what a sidebar holds, saying
    how much was left and where the rest is."""
    text = [str(line)[:300] for line in (listed.get("text") or [])[:10_000]]
    if len(text) <= MAX_CHANGE_LINES:
        return text
    left = len(text) - MAX_CHANGE_LINES
    return [*text[:MAX_CHANGE_LINES], f"... and {left} more lines: `blendmesh scenes diff`"]


def unreplayable(ran: dict[str, Any]) -> str:
    """Why a run (``GET /api/runs/{id}/operations``) cannot be replayed in the session, in
    words; '' when it can."""
    if not ran.get("committed"):
        return "it changed nothing on the mesh"
    for op in ran.get("operations") or []:
        tool = str(op.get("tool"))
        if tool in LOOKS:
            continue
        if tool not in REPLAYED:
            return f"its {tool} step is made only by the mesh"
        if op.get("state") != "completed":
            return f"its {tool} step is {op.get('state')}"
    return ""


def run_words(run: dict[str, Any]) -> str:
    """A run in the panel's list: its request, or what a run made without words does
    (the gateway's ``request``: "import a .blend (76.7 MB)"), its id when neither came."""
    said = run.get("request") or run.get("prompt")
    if said:
        return " ".join(str(said).split())[:200]
    return f"run {str(run.get('runId'))[:16]}"


def undo_label(ran: dict[str, Any]) -> str:
    """A replayed run's undo step: its request, as Edit > Undo History shows it."""
    said = " ".join(str(ran.get("prompt") or f"run {ran.get('runId', '?')}").split())
    return "blendmesh: " + (said if len(said) <= 60 else said[:57] + "...")


def approval_lines(approval: dict[str, Any], width: int = 70) -> list[tuple[str, str]]:
    """(kind, text) lines that show an approval: its reason, each operation with its
    arguments, and trusted Python's code line by line under its hash."""
    lines = [("reason", str(approval.get("reason", "")))]
    for op in approval.get("operations", []):
        args = dict(op.get("args") or {})
        code = args.pop("code", None)
        digest = args.pop("code_sha256", None)
        shown = ", ".join(f"{k}={_short(v)}" for k, v in sorted(args.items()))
        lines.append(("operation", f"{op.get('tool')} [{op.get('safetyLevel')}] {shown}"))
        if isinstance(code, str):
            lines.append(("hash", f"code {digest}"))
            for n, text in enumerate(code.splitlines()[:40], 1):
                # Escaped: a bidi control or other invisible character shows as what it is.
                lines.append(("code", f"{n:>3} | {_visible(text)}"[:width]))
    return lines


def _short(value: Any, limit: int = 48) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _visible(text: str) -> str:
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)
