"""A person's review of one scene revision: approve it, or ask for changes, with a note.

The review is a fact in the log (``<prefix>.scene.<scene_id>.reviewed``), beside the
revision's change list, not a state kept anywhere else: a scene's reviews are read back
from the log, newest last. Who may review is one rule in the doors' core
(``services/doors/core/reviews.py``), written to be widened by projects and roles.
"""

from __future__ import annotations

from typing import Literal

from contracts.errors import BlendmeshError
from contracts.event_base import Event

Verdict = Literal["approve", "request_changes"]
VERDICTS: tuple[Verdict, ...] = ("approve", "request_changes")
MAX_NOTE_CHARS = 2000  # a note is a paragraph for the artist, not a document
# Reviews of one scene read back at most: a scene reviewed more often than this shows
# its newest ones and says how many it left out.
MAX_REVIEWS_READ = 1000


class RevisionReviewed(Event, frozen=True, kw_only=True, tag="scene.reviewed"):
    """``reviewer`` approved ``revision`` of ``scene_id`` or asked for changes to it."""

    scene_id: str
    revision: int
    reviewer: str
    verdict: Verdict
    note: str = ""
    scene_hash: str = ""  # the revision reviewed, by content: a revert's twin is not it


class ReviewRefused(BlendmeshError, ValueError):
    """A review that cannot be recorded as given; the message says what to change."""


def check_review(verdict: str, note: str) -> Verdict:
    """``verdict`` when it is one of ``VERDICTS`` and ``note`` is within its bound;
    ``ReviewRefused`` naming what is wrong otherwise."""
    if verdict not in VERDICTS:
        raise ReviewRefused(
            f"verdict {verdict[:40]!r} is not one of {', '.join(VERDICTS)}: "
            "approve the revision or request changes"
        )
    if len(note) > MAX_NOTE_CHARS:
        raise ReviewRefused(
            f"the note holds {len(note)} characters, more than the {MAX_NOTE_CHARS} a "
            "review keeps; shorten it and link anything longer"
        )
    return "approve" if verdict == "approve" else "request_changes"
