"""``blendmesh scenes diff`` and ``blendmesh scenes review``: a revision's change list, and a
review recorded on it (``services/doors/core/reviews.py``)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

import msgspec

from contracts.change_text import change_lines
from contracts.changes import to_data
from services.doors.cli.common import EXIT_OK, connected
from services.doors.core.reviews import NoRevision, Revisions, registry_approvers
from services.runtime.service.settings import Settings

if TYPE_CHECKING:
    from services.doors.cli.screen import Screen

VERDICT_WORDS = {"approve": "approve", "request-changes": "request_changes"}


def revision_word(value: str | None, what: str, default: str) -> int | None:
    """A revision given on the command line: a number, or ``default``'s word (None)."""
    if value is None or value == default:
        return None
    try:
        return int(value)
    except ValueError:
        raise NoRevision(
            f"{what} {value[:40]!r} is not a revision number: give a number "
            f"(`blendmesh scenes history SCENE` lists them) or {default!r}"
        ) from None


async def dispatch(args: argparse.Namespace, settings: Settings, out: Screen) -> int:
    base = revision_word(args.base, "base revision", "parent")
    revision = revision_word(args.revision, "revision", "head")
    async with connected(settings, ()) as bus:
        door = Revisions.of(bus, registry_approvers(settings))
        if args.scenes_command == "review":
            if revision is None:
                revision = (await door.reviewable(args.scene, settings.user)).revision
            event = await door.review(
                args.scene, settings.user, revision, VERDICT_WORDS[args.verdict], args.note
            )
            said = "approved" if event.verdict == "approve" else "requested changes to"
            line = f"{event.reviewer} {said} scene {event.scene_id} revision {event.revision}"
            if args.json:
                sys.stdout.write(msgspec.json.encode(event).decode() + "\n")
            else:
                out.print(line, markup=False, highlight=False)
            return EXIT_OK
        listed = await door.changes(args.scene, settings.user, base, revision)
    if args.json:
        sys.stdout.write(msgspec.json.encode(to_data(listed)).decode() + "\n")
    else:
        for line in change_lines(listed):
            out.print(line, markup=False, highlight=False, soft_wrap=True)
    return EXIT_OK
