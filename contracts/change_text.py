"""A change list as the lines a person reads: the CLI prints them, the add-on shows them."""

from __future__ import annotations

from typing import Any

import msgspec

from contracts.changes import ACTIONS, KINDS, Change, ChangeList

_SIGN = {"added": "+", "removed": "-", "changed": "~"}
_WORD = {"node_group": "node group"}
_PLURAL = {"data": "data", "library": "libraries", "node_group": "node groups"}


def _value(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, str):
        return value
    return msgspec.json.encode(value).decode()


def _property_line(change: Change, name: str, before: Any, after: Any, cut: bool) -> str:
    more = " (cut)" if cut else ""
    if change.action == "added":
        return f"      {name}: {_value(after)}{more}"
    if change.action == "removed":
        return f"      {name}: was {_value(before)}{more}"
    return f"      {name}: {_value(before)} -> {_value(after)}{more}"


def summary(changes: ChangeList) -> str:
    """One line: what the revision is measured against and how much changed, by kind."""
    base = f"revision {changes.base}" if changes.base is not None else "an empty scene"
    parts = []
    for kind in KINDS:
        found = changes.counts.get(kind, {})
        words = [f"{found[a]} {a}" for a in ACTIONS if found.get(a)]
        if words:
            parts.append(f"{_PLURAL.get(kind, kind + 's')} {', '.join(words)}")
    what = "; ".join(parts) or "no changes"
    return f"scene {changes.scene_id} revision {changes.revision} against {base}: {what}"


def change_lines(changes: ChangeList) -> list[str]:
    """The summary, one line per entry with its properties, what the bounds left out,
    and the revision's reviews."""
    lines = [summary(changes)]
    for change in changes.changes:
        kind = _WORD.get(change.kind, change.kind)
        lines.append(f"  {_SIGN[change.action]} {kind} {change.name} {change.action}")
        for prop in change.properties:
            lines.append(_property_line(change, prop.name, prop.before, prop.after, prop.cut))
        if change.more_properties:
            lines.append(f"      ... and {change.more_properties} more properties")
    if changes.more_changes:
        lines.append(f"  ... and {changes.more_changes} more changes (the list shows the first)")
    for review in changes.reviews:
        verdict = "approved" if review.verdict == "approve" else "requested changes"
        note = f": {review.note}" if review.note else ""
        lines.append(f"review: {review.reviewer} {verdict}{note}")
    if changes.more_reviews:
        lines.append(f"  ... and {changes.more_reviews} older reviews")
    return lines
