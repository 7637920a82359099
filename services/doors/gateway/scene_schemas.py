"""The JSON of the scene routes (camelCase, like ``schemas.py``), mapped explicitly from
the scene door's data (``services/doors/core/scene_client.py``, ``contracts/scene_report.py``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from contracts.scene_report import RevisionEntry, report_lines
from services.doors.gateway.schemas import PendingApproval, RunResponse

MAX_REVISION = 1_000_000_000  # far beyond any scene's history; keeps the body bounded


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


# -- requests --------------------------------------------------------------------------


class RevertBody(_Model):
    revision: int = Field(ge=1, le=MAX_REVISION, description="The revision to go back to")


# -- answers ---------------------------------------------------------------------------


class SceneRow(_Model):
    scene_id: str
    revision: int = Field(description="The head revision")
    scene_hash: str
    objects: int | None = Field(description="Objects at the head; null without its inspection")
    changed_at: str | None = Field(description="When the head was stored (ISO 8601)")
    changed_by: str | None
    run_id: str | None = Field(description="The run that committed the head")


class SceneList(_Model):
    scenes: list[SceneRow]


class SceneObject(_Model):
    name: str
    type: str
    location: list[float]
    rotation_degrees: list[float]
    scale: list[float]
    modifiers: list[str] = Field(description="``name:TYPE`` of each modifier, in stack order")
    materials: list[str]
    parent: str | None = None
    camera: dict[str, Any] | None = None
    light: dict[str, Any] | None = None


class SceneSummary(_Model):
    """What a person reads of the head revision; ``text`` is the same as lines."""

    scene_id: str
    revision: int
    scene_hash: str
    object_count: int
    types: dict[str, int] = Field(description="How many objects of each Blender type")
    objects: list[SceneObject]
    more_objects: int = Field(description="Objects beyond the ones listed")
    materials: list[str]
    lights: list[str]
    cameras: list[str]
    last_run: str | None
    last_user: str | None
    text: list[str]


class Revision(_Model):
    revision: int
    scene_hash_prefix: str
    stored_at: str = Field(description="ISO 8601, as the store recorded it")
    run_id: str | None = Field(description="The run that committed it; null without a record")
    user: str | None
    approved_by: str | None
    tools: list[str]


class SceneHistory(_Model):
    scene_id: str
    revisions: list[Revision] = Field(description="Oldest first")


class RanOperation(_Model):
    operation_id: str
    tool: str
    args: dict[str, Any] = Field(description="The arguments it was planned and run with")
    state: str = Field(description="planned, awaiting_confirmation, executing, completed, ...")


class RunOperations(_Model):
    """A run's last plan as it ran: what a client that holds the scene open replays."""

    run_id: str
    scene_id: str
    prompt: str | None
    status: str
    committed: bool = Field(description="Whether the run committed a revision")
    scene_hash: str | None = Field(description="The scene hash of the revision it committed")
    operations: list[RanOperation] = Field(description="In plan order")


class SceneRun(_Model):
    """An import or a revert: the run, and the approval it waits for (null once it ran)."""

    run: RunResponse
    approval: PendingApproval | None


# -- mapping ---------------------------------------------------------------------------


def row_out(row: dict[str, Any]) -> SceneRow:
    return SceneRow(
        scene_id=row["scene_id"],
        revision=row["revision"],
        scene_hash=row["scene_hash"],
        objects=row["objects"],
        changed_at=row["changed_at"],
        changed_by=row["changed_by"],
        run_id=row["run_id"],
    )


def summary_out(report: dict[str, Any]) -> SceneSummary:
    return SceneSummary(
        scene_id=report["scene_id"],
        revision=report["revision"],
        scene_hash=report["scene_hash"],
        object_count=report["object_count"],
        types=report["types"],
        objects=[
            SceneObject(
                name=o["name"],
                type=o["type"],
                location=o["location"],
                rotation_degrees=o["rotation_degrees"],
                scale=o["scale"],
                modifiers=o["modifiers"],
                materials=o["materials"],
                parent=o.get("parent"),
                camera=o.get("camera"),
                light=o.get("light"),
            )
            for o in report["objects"]
        ],
        more_objects=report["more_objects"],
        materials=report["materials"],
        lights=report["lights"],
        cameras=report["cameras"],
        last_run=report["last_run"],
        last_user=report["last_user"],
        text=report_lines(report),
    )


def revision_out(entry: RevisionEntry) -> Revision:
    return Revision(
        revision=entry.revision,
        scene_hash_prefix=entry.scene_hash_prefix,
        stored_at=entry.stored_at,
        run_id=entry.run_id,
        user=entry.user,
        approved_by=entry.approved_by,
        tools=list(entry.tools),
    )
