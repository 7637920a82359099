"""What a user's own login asks the bus door, and what it answers (docs/bus.md §4).

The door listens on ``<prefix>.api.<user>.<verb>``; the server lets a login publish only
under its own user, so the subject says who asks and nothing in a body can claim another
user (docs/adr/0015). Every answer carries ``ok``; when it is false, ``error`` has a code
a program can branch on and a message that says what to do. Something that is not the
asker's answers exactly like something that does not exist.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Any, Literal

import msgspec

from contracts.projects import LOCK_TTL, MAX_LOCK_TTL, Holder, Note, ProjectId, Role, UserName
from contracts.reviews import MAX_NOTE_CHARS, Verdict
from contracts.scene_files import BLOB_PATTERN

VERBS = (
    "run.submit",
    "run.resolve",
    "run.cancel",
    "run.events",
    "run.audit",
    "runs.list",
    "scenes.list",
    "scenes.changes",
    "scenes.review",
    "files.stage",
    "files.get",
    "projects.list",
    "projects.show",
    "projects.create",
    "projects.member",
    "projects.file",
    "locks.take",
    "locks.release",
    "locks.break",
    "render.submit",
    "render.show",
    "render.cancel",
    "render.frame",
)
MAX_LIST = 200
# Bytes of a file one message carries: base64 of it stays well under NATS's 1 MB payload.
MAX_FILE_CHUNK = 512 * 1024

ErrorCode = Literal["INVALID", "NOT_FOUND", "CONFLICT", "FORBIDDEN", "UNAVAILABLE"]
RunId = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_-]{1,128}$")]


def run_prefix(user: str) -> str:
    """How every run id ``user``'s login submits begins, before a ``-`` (docs/adr/0045).

    A login picks its own run ids, and run ids are one space for every user: without a
    space of its own, a submit would have to answer "exists" for another user's run id
    and tell that it does. 64 bits of the name's hash never meet another user's, and a
    letter then hex digits never meet the ids the gateway mints (``run-`` and hex).
    """
    return "r" + hashlib.sha256(user.encode()).hexdigest()[:16]


class _Message(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


class RunRef(_Message, frozen=True, kw_only=True):
    """``run.events`` and ``run.audit``: one of the asker's runs. ``offset`` skips the
    events already read when an answer said there were more."""

    run_id: RunId
    offset: Annotated[int, msgspec.Meta(ge=0, le=100_000)] = 0


class ListQuery(_Message, frozen=True, kw_only=True):
    """``runs.list`` and ``scenes.list``: the asker's newest first."""

    limit: Annotated[int, msgspec.Meta(ge=1, le=MAX_LIST)] = 50


SceneId = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_-]{1,128}$")]
Revision = Annotated[int, msgspec.Meta(ge=1, lt=2**31)]


class ChangesQuery(_Message, frozen=True, kw_only=True):
    """``scenes.changes``: what ``revision`` (default: the head) of one of the asker's
    scenes changed against ``base`` (default: the revision before it), with its reviews."""

    scene_id: SceneId
    revision: Revision | None = None
    base: Revision | None = None


class ReviewAsk(_Message, frozen=True, kw_only=True):
    """``scenes.review``: approve a revision or request changes, with a note; the asker is
    the reviewer (the scene's owner, or an approver)."""

    scene_id: SceneId
    revision: Revision
    verdict: Verdict
    note: Annotated[str, msgspec.Meta(max_length=MAX_NOTE_CHARS)] = ""


class FileUpload(_Message, frozen=True, kw_only=True):
    """``files.stage``: a file for the asker's own runs, base64-encoded (an asset for
    ``scene.import_asset``): at most MAX_FILE_CHUNK bytes, larger ones through the gateway.
    Staged files last a day; the reply's ``blob`` names it in a plan."""

    data: Annotated[str, msgspec.Meta(min_length=1, max_length=(MAX_FILE_CHUNK + 2) // 3 * 4)]


class FileRef(_Message, frozen=True, kw_only=True):
    """``files.get``: one of the asker's staged files (a view ``scene.render_view`` drew
    names its ``image``), MAX_FILE_CHUNK bytes from ``offset``."""

    blob: Annotated[str, msgspec.Meta(pattern=BLOB_PATTERN)]
    offset: Annotated[int, msgspec.Meta(ge=0, le=1 << 31)] = 0


class RenderAsk(_Message, frozen=True, kw_only=True):
    """``render.submit``: frames of a committed revision of one of the asker's scenes, in
    the words every door takes (docs/renders.md); ``revision`` None is the newest."""

    scene_id: RunId
    frames: Annotated[str, msgspec.Meta(max_length=40)] = "1"
    engine: Annotated[str, msgspec.Meta(max_length=40)] = "cycles"
    samples: Annotated[int, msgspec.Meta(ge=-(1 << 62), le=1 << 62)] = 16
    size: Annotated[str, msgspec.Meta(max_length=40)] = "640x360"
    revision: Annotated[int, msgspec.Meta(ge=1, le=1 << 31)] | None = None


class JobRef(_Message, frozen=True, kw_only=True):
    """``render.show``, ``render.cancel``: one of the asker's render jobs; ``render.frame``
    also names the frame, handed out MAX_FILE_CHUNK bytes from ``offset``."""

    job_id: RunId
    frame: Annotated[int, msgspec.Meta(ge=0, le=1 << 31)] | None = None
    offset: Annotated[int, msgspec.Meta(ge=0, le=1 << 31)] = 0


class DoorError(msgspec.Struct, frozen=True, kw_only=True):
    code: ErrorCode
    message: str


class ProjectRef(_Message, frozen=True, kw_only=True):
    """``projects.show`` and ``projects.create``: one project by id."""

    project_id: ProjectId


class MemberChange(_Message, frozen=True, kw_only=True):
    """``projects.member``: give ``member`` a role in the project; ``role: null`` removes it."""

    project_id: ProjectId
    member: UserName
    role: Role | None


class SceneFiling(_Message, frozen=True, kw_only=True):
    """``projects.file``: file one of the asker's scenes in the project."""

    project_id: ProjectId
    scene_id: SceneId


class LockRequest(_Message, frozen=True, kw_only=True):
    """``locks.take``: lock a scene for the asker (``held_by: session`` for a live session)."""

    scene_id: SceneId
    ttl_seconds: Annotated[float, msgspec.Meta(gt=0, le=MAX_LOCK_TTL)] = LOCK_TTL
    note: Note = ""
    held_by: Holder = "person"


class LockRef(_Message, frozen=True, kw_only=True):
    """``locks.release`` (the asker's own lock) and ``locks.break`` (a lead's)."""

    scene_id: SceneId
    note: Note = ""


class DoorReply(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The answer to every verb; only the fields of the verb asked are filled in.

    ``events`` are run events as the log holds them (JSON objects with a ``type``);
    ``next_offset`` is set when more events (or bytes of a file) follow than one answer holds.
    """

    ok: bool
    error: DoorError | None = None
    run_id: str | None = None
    events: list[dict[str, Any]] | None = None
    next_offset: int | None = None
    records: list[dict[str, Any]] | None = None
    runs: list[dict[str, Any]] | None = None
    scenes: list[dict[str, Any]] | None = None
    blob: str | None = None  # files.stage, files.get: the file's content address
    size: int | None = None  # files.stage, files.get: the whole file's bytes
    data: str | None = None  # files.get, render.frame: base64 of the bytes from the offset
    changes: dict[str, Any] | None = None  # scenes.changes: the change list
    review: dict[str, Any] | None = None  # scenes.review: the scene.reviewed event recorded
    projects: list[dict[str, Any]] | None = None  # projects.list
    project: dict[str, Any] | None = None  # projects.show|create|member|file
    lock: dict[str, Any] | None = None  # locks.*: the lock taken, released or broken
    job: dict[str, Any] | None = None  # render.*: the job as it stands (docs/renders.md)
