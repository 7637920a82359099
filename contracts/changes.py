"""A revision's change list: what it changed against its parent, as every door shows it.

Each entry is one datablock (an object, its mesh or curve data, a material, a modifier
of an object, a node group, a linked library) that was added, removed or changed, with
the properties that differ, before and after. The list is derived from the two
revisions' inspection artifacts (``contracts/inspection.py``) by ``contracts.diff``.

Bounded, and the bound shows: at most ``MAX_CHANGES`` entries (``more_changes`` counts
the rest, ``counts`` counts every entry, shown or not), at most ``MAX_PROPERTIES`` per
entry (``more_properties``), and a value whose JSON is longer than ``MAX_VALUE_CHARS``
is cut to that many characters and marked ``cut``.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from contracts.reviews import Verdict

Kind = Literal["object", "data", "material", "modifier", "node_group", "library"]
KINDS: tuple[Kind, ...] = ("object", "data", "material", "modifier", "node_group", "library")
Action = Literal["added", "removed", "changed"]
ACTIONS: tuple[Action, ...] = ("added", "removed", "changed")

MAX_CHANGES = 500  # entries shown; a whole new set of 10,000 objects is counted, not listed
MAX_PROPERTIES = 40  # properties shown per entry
MAX_VALUE_CHARS = 240  # a value's JSON, beyond which it is cut
MAX_NAME_CHARS = 200  # Blender's names are 63 bytes; a library path may be longer


class PropertyChange(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One property that differs: its value before and after (None where it had none).
    A cut value is the first ``MAX_VALUE_CHARS`` characters of its JSON, as a string."""

    name: str
    before: Any = None
    after: Any = None
    cut: bool = False


class Change(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One datablock added, removed or changed. A modifier is named ``Object/Modifier``."""

    kind: Kind
    name: str
    action: Action
    properties: list[PropertyChange] = []
    more_properties: int = 0  # properties that differ beyond those listed


class Review(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A review recorded on the revision (``scene.reviewed`` in the log), oldest first."""

    reviewer: str
    verdict: Verdict
    note: str = ""
    at: float = 0.0  # seconds since the epoch, UTC


class ChangeList(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What ``revision`` of ``scene_id`` changed against ``base`` (None: against an empty
    scene, for a scene's first revision)."""

    scene_id: str
    revision: int
    base: int | None = None
    changes: list[Change] = []
    more_changes: int = 0  # entries beyond those listed
    counts: dict[str, dict[str, int]] = {}  # kind -> action -> entries, listed or not
    reviews: list[Review] = []
    more_reviews: int = 0  # older reviews of the revision left out


def encode(changes: ChangeList) -> bytes:
    return msgspec.json.encode(changes)


def to_data(changes: ChangeList) -> dict[str, Any]:
    """The change list as plain JSON data (what the HTTP, MCP and bus doors answer)."""
    out: dict[str, Any] = msgspec.to_builtins(changes)
    return out
