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


class DoorError(msgspec.Struct, frozen=True, kw_only=True):
    code: ErrorCode
    message: str


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
    data: str | None = None  # files.get: base64 of the bytes from the offset asked
    changes: dict[str, Any] | None = None  # scenes.changes: the change list
    review: dict[str, Any] | None = None  # scenes.review: the scene.reviewed event recorded
