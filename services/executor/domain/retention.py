"""Which stored revisions a retention policy keeps: pure decisions, no I/O.

A scene keeps its last ``keep`` revisions up to its head, every revision a user tagged,
and, for ``grace`` seconds, anything it cannot place: a revision newer than the head (a
commit between its manifest and its head), or a scene with no head at all. The head is
always kept, so the chunks a run's next commit builds on are never collected.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Retention:
    """The policy: revisions kept per scene and the ages past which things go."""

    keep: int = 50  # newest revisions of each scene, the head included
    chunk_grace: float = 3600.0  # seconds an unplaced revision or unnamed chunk stays
    result_ttl: float = 7 * 24 * 3600.0  # seconds a Python step's result image stays
    upload_ttl: float = 24 * 3600.0  # seconds a staged upload stays

    def __post_init__(self) -> None:
        if self.keep < 1:
            raise ValueError(f"retention keeps {self.keep} revisions; keep at least 1 (the head)")


@dataclass(frozen=True)
class Stored:
    """One revision object as listed: its scene, number, object name and time."""

    scene_id: str
    revision: int
    name: str
    stored_at: str  # ISO 8601, as the object store records it


def age(stored_at: str, now: datetime) -> float:
    """Seconds since ``stored_at``; an unreadable time counts as new (kept, not lost)."""
    try:
        return (now - datetime.fromisoformat(stored_at)).total_seconds()
    except ValueError:
        return 0.0


def doomed(
    stored: Iterable[Stored],
    heads: Mapping[str, tuple[int, str]],
    tags: Mapping[str, set[int]],
    policy: Retention,
    now: datetime,
) -> list[Stored]:
    """The revisions past ``policy``. ``heads`` maps a scene to its head's (revision,
    object name); ``tags`` a scene to its tagged revision numbers."""
    gone = []
    for item in stored:
        head = heads.get(item.scene_id)
        if head is None or item.revision > head[0]:
            if age(item.stored_at, now) > policy.chunk_grace:
                gone.append(item)  # a commit that never moved a head, long ago
            continue
        if item.name == head[1] or item.revision in tags.get(item.scene_id, set()):
            continue
        if item.revision <= head[0] - policy.keep:
            gone.append(item)
    return gone
