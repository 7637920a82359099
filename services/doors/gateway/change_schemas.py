"""The JSON of the change-list and review routes (camelCase, like ``scene_schemas.py``),
mapped explicitly from ``contracts/changes.py``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from contracts.change_text import change_lines
from contracts.changes import MAX_CHANGES, MAX_PROPERTIES, MAX_VALUE_CHARS, ChangeList
from contracts.reviews import MAX_NOTE_CHARS, RevisionReviewed


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class ReviewBody(_Model):
    verdict: Literal["approve", "request_changes"] = Field(
        description="Approve the revision, or ask its artist for changes"
    )
    note: str = Field(
        default="", max_length=MAX_NOTE_CHARS, description="What the artist reads with it"
    )


class PropertyOut(_Model):
    name: str
    before: Any = Field(default=None, description="null where it had none")
    after: Any = None
    cut: bool = Field(
        default=False, description=f"A value cut to the first {MAX_VALUE_CHARS} characters"
    )


class ChangeOut(_Model):
    kind: Literal["object", "data", "material", "modifier", "node_group", "library"]
    name: str = Field(description="A modifier is named ``Object/Modifier``")
    action: Literal["added", "removed", "changed"]
    properties: list[PropertyOut] = Field(description=f"At most {MAX_PROPERTIES}")
    more_properties: int


class ReviewOut(_Model):
    reviewer: str
    verdict: Literal["approve", "request_changes"]
    note: str
    at: float = Field(description="Seconds since the epoch, UTC")


class ChangeListOut(_Model):
    """What a revision changed against another (its parent by default), with its reviews;
    ``text`` is the same as lines."""

    scene_id: str
    revision: int
    base: int | None = Field(description="null: compared with an empty scene")
    changes: list[ChangeOut] = Field(description=f"At most {MAX_CHANGES}, by kind and name")
    more_changes: int = Field(description="Changes beyond those listed")
    counts: dict[str, dict[str, int]] = Field(description="kind -> action -> changes, all")
    reviews: list[ReviewOut]
    more_reviews: int
    text: list[str]


class ReviewRecorded(_Model):
    scene_id: str
    revision: int
    reviewer: str
    verdict: Literal["approve", "request_changes"]
    note: str
    event_id: str = Field(description="The ``scene.reviewed`` event in the log")


def changes_out(listed: ChangeList) -> ChangeListOut:
    return ChangeListOut(
        scene_id=listed.scene_id,
        revision=listed.revision,
        base=listed.base,
        changes=[
            ChangeOut(
                kind=c.kind,
                name=c.name,
                action=c.action,
                properties=[
                    PropertyOut(name=p.name, before=p.before, after=p.after, cut=p.cut)
                    for p in c.properties
                ],
                more_properties=c.more_properties,
            )
            for c in listed.changes
        ],
        more_changes=listed.more_changes,
        counts=listed.counts,
        reviews=[
            ReviewOut(reviewer=r.reviewer, verdict=r.verdict, note=r.note, at=r.at)
            for r in listed.reviews
        ],
        more_reviews=listed.more_reviews,
        text=change_lines(listed),
    )


def review_out(event: RevisionReviewed) -> ReviewRecorded:
    return ReviewRecorded(
        scene_id=event.scene_id,
        revision=event.revision,
        reviewer=event.reviewer,
        verdict=event.verdict,
        note=event.note,
        event_id=event.event_id,
    )
