"""What each MCP tool answers as structured content, typed once.

A tool's ``outputSchema`` is generated from these types (``output_schema``), published
as ``contracts/schemas/mcp/<tool>.json`` and held to the committed files in CI; the MCP
tests validate every answer a real client gets against the schema its tool declares.
Each schema admits the tool's answer and the error answer every tool may give instead
(``ErrorAnswer``): MCP clients validate structured content even on an error result.

Paths on the mesh's host (``HIDDEN``) are never answered, so they are not in a schema.
"""

from __future__ import annotations

from typing import Any

import msgspec

from contracts.bridge import PreviewEngine
from contracts.changes import ChangeList
from contracts.queries import ActionRow, AuditRecord, RunRow, TimelineEntry
from contracts.receipts import AskedOperation, RunResult
from contracts.render_fold import RenderJob
from contracts.scenes import MaterialSummary, ObjectSummary
from contracts.schema_text import dedented
from contracts.views import ObjectDetail, Shading

HIDDEN = ("blend_path",)  # the mesh host's paths: a remote caller may not know them


class _Answer(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


class Fault(_Answer, frozen=True, kw_only=True):
    """A spec 002 error class and a message that is safe to show."""

    type: str
    message: str


class ErrorAnswer(_Answer, frozen=True, kw_only=True):
    """What any tool answers instead when it cannot: bad input, nothing there, no mesh."""

    error: Fault


class SceneAnswer(_Answer, frozen=True, kw_only=True):
    """A scene's head revision, with its objects and materials once they are summarised."""

    scene_id: str
    revision: int
    scene_hash: str
    objects: list[ObjectSummary] = []
    materials: list[MaterialSummary] = []


class ApprovalAnswer(_Answer, frozen=True, kw_only=True):
    """The approval a run waits on, and the commands a person runs to give it."""

    approval_id: str
    reason: str
    operations: list[AskedOperation]
    code_sha256: list[str]  # of each trusted Python step, which an approval quotes
    approve_command: str
    reject_command: str


class RunAnswer(RunResult, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A run as ``run``, ``run_status``, ``cancel_run``, ``rerun_run``, ``fork_run`` and
    ``import_asset`` answer it."""

    ok: bool  # completed
    scene: SceneAnswer | None
    # Shown while the run waits for a person: what it is asked, and how to answer.
    approval: ApprovalAnswer | None = None  # type: ignore[assignment]
    error: Fault | None = None  # a failed run's failure, as an error class


class RunsAnswer(_Answer, frozen=True, kw_only=True):
    runs: list[RunRow]


class AuditAnswer(_Answer, frozen=True, kw_only=True):
    """One page of a run's trail: its rows numbered actions first, then audit records, then
    timeline, from ``offset``, as many as a host should read at once (ADR 0076)."""

    run: RunRow
    actions: list[ActionRow]
    audit_records: list[AuditRecord]
    timeline: list[TimelineEntry]
    offset: int = 0  # the first row of this page
    next_offset: int | None = None  # ask again with it for the rest; None: the last page
    rows: int | None = None  # the run's rows in all


class SceneHeadAnswer(_Answer, frozen=True, kw_only=True):
    scene_id: str
    revision: int
    scene_hash: str


class ScenesAnswer(_Answer, frozen=True, kw_only=True):
    scenes: list[SceneHeadAnswer]


class RevisionAnswer(_Answer, frozen=True, kw_only=True):
    revision: int
    scene_hash_prefix: str


class HistoryAnswer(_Answer, frozen=True, kw_only=True):
    revisions: list[RevisionAnswer]


class PreviewAnswer(_Answer, frozen=True, kw_only=True):
    scene_id: str  # the image itself is the result's image content


class InspectAnswer(ObjectDetail, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One object in depth, and the read-only run that described it."""

    run_id: str
    scene_id: str


class ViewAnswer(_Answer, frozen=True, kw_only=True):
    """A rendered view: the image is the result's image content, ``image`` its address."""

    run_id: str
    scene_id: str
    image: str
    bytes: int
    width: int
    height: int
    engine: PreviewEngine
    shading: Shading


class ExportAnswer(_Answer, frozen=True, kw_only=True):
    """An exported file: the answer's embedded resource holds it, ``file`` its address."""

    run_id: str
    scene_id: str
    file: str
    bytes: int
    format: str
    objects: int


class ToolEntry(_Answer, frozen=True, kw_only=True):
    """A tool a plan may name (``contracts/tool_categories.py``): its schemas when listed
    by category or found by search, and with the core set."""

    name: str
    category: str
    description: str
    safety_level: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None


class CategoryEntry(_Answer, frozen=True, kw_only=True):
    """A category of tools: what it holds and its tools' names."""

    category: str
    about: str
    tools: list[str]


class CatalogAnswer(_Answer, frozen=True, kw_only=True):
    """Tools found in the catalog, and the categories to look in for more."""

    catalog_version: str
    tools: list[ToolEntry]
    categories: list[CategoryEntry]


class FrameAnswer(_Answer, frozen=True, kw_only=True):
    """A stored frame of a render job; its PNG is the image content beside it."""

    job_id: str
    frame: int
    sha256: str
    bytes: int


# Each tool's answers, besides ErrorAnswer. A read that policy holds for a person, or
# whose run fails, answers like ``run``.
ANSWERS: dict[str, tuple[type[msgspec.Struct], ...]] = {
    "run": (RunAnswer,),
    "run_status": (RunAnswer,),
    "cancel_run": (RunAnswer,),
    "rerun_run": (RunAnswer,),
    "fork_run": (RunAnswer,),
    "import_asset": (RunAnswer,),
    "answer_approval": (RunAnswer,),  # the approval card's, not the model's
    "runs": (RunsAnswer,),
    "audit": (AuditAnswer,),
    "scene": (SceneAnswer,),
    "scenes": (ScenesAnswer,),
    "scene_history": (HistoryAnswer,),
    "scene_changes": (ChangeList,),
    "preview": (PreviewAnswer,),
    "inspect_object": (InspectAnswer, RunAnswer),
    "render_view": (ViewAnswer, RunAnswer),
    "export_scene": (ExportAnswer, RunAnswer),
    "search_tools": (CatalogAnswer,),
    "list_category": (CatalogAnswer,),
    "render": (RenderJob,),
    "render_job": (RenderJob,),
    "cancel_render": (RenderJob,),
    "render_frame": (FrameAnswer,),
}


def _strict(schema: Any) -> Any:
    """Every object type closed (an answer with a field its type lacks fails), the host's
    paths left out."""
    if isinstance(schema, dict):
        out = {k: _strict(v) for k, v in schema.items()}
        if isinstance(out.get("properties"), dict) and out.get("type") == "object":
            for hidden in HIDDEN:
                out["properties"].pop(hidden, None)
            if "required" in out:
                out["required"] = [r for r in out["required"] if r not in HIDDEN]
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


def output_schema(tool: str) -> dict[str, Any]:
    """The JSON Schema of ``tool``'s structured content: one of its answers, or an error."""
    kinds = (*ANSWERS[tool], ErrorAnswer)
    refs, defs = msgspec.json.schema_components(kinds, ref_template="#/$defs/{name}")
    return {"type": "object", "anyOf": list(refs), "$defs": dedented(_strict(defs))}
