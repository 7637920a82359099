"""The audit views' tables, and the types the stores take and give for writing them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from services.audit.projections import Change, Row, RunView

# What projecting one event writes, given the view of its run.
Project = Callable[[RunView], Sequence[Change]]
# A stretch of the log: (stream sequence, the event's run or None, its projection).
Batch = Sequence[tuple[int, str | None, Project]]

SCHEMA = """
CREATE TABLE IF NOT EXISTS tracking (id INTEGER PRIMARY KEY CHECK (id = 1), last_seq INTEGER);
CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, request_id TEXT, thread_id TEXT,
  user TEXT, scene_id TEXT, prompt TEXT, state TEXT, planner TEXT, model TEXT, error_code TEXT,
  message TEXT, blend_path TEXT, scene_hash TEXT, created_at REAL, updated_at REAL,
  plan_words TEXT);
CREATE INDEX IF NOT EXISTS runs_newest ON runs (created_at DESC, run_id DESC);
CREATE INDEX IF NOT EXISTS runs_by_user ON runs (user, created_at DESC, run_id DESC);
CREATE TABLE IF NOT EXISTS actions (run_id TEXT, operation_id TEXT, tool_name TEXT,
  safety_level TEXT, state TEXT, decision TEXT, mcp_call_id TEXT, blender_mutation_id TEXT,
  error_code TEXT, approval_id TEXT, input_hash TEXT, created_at REAL, updated_at REAL,
  PRIMARY KEY (run_id, operation_id));
CREATE TABLE IF NOT EXISTS audit_records (stream_seq INTEGER PRIMARY KEY, event_id TEXT,
  run_id TEXT, user TEXT, timestamp REAL, request_id TEXT, operation_id TEXT, mcp_call_id TEXT,
  blender_mutation_id TEXT, tool_name TEXT, safety_level TEXT, status TEXT,
  scene_hash_before TEXT, scene_hash_after TEXT, scene_id TEXT, model TEXT, input_hash TEXT,
  decision TEXT, approval_id TEXT, error_code TEXT, message TEXT);
CREATE INDEX IF NOT EXISTS audit_by_run ON audit_records (run_id, stream_seq);
CREATE TABLE IF NOT EXISTS timeline (stream_seq INTEGER PRIMARY KEY, run_id TEXT,
  event_id TEXT, type TEXT, at REAL, detail TEXT, facts TEXT);
CREATE INDEX IF NOT EXISTS timeline_by_run ON timeline (run_id, stream_seq);
CREATE TABLE IF NOT EXISTS dead_letters (stream_seq INTEGER PRIMARY KEY, consumer TEXT,
  subject TEXT, failed_seq INTEGER, deliveries INTEGER, reason TEXT, at REAL);
"""

# Columns added after the first release: a database made before them gets them (NULL in
# old rows until ``blendmesh audit rebuild``) instead of failing on its first write.
ADDED_COLUMNS: dict[str, tuple[str, ...]] = {
    "runs": ("plan_words",),
    "actions": ("approval_id", "input_hash", "created_at", "updated_at"),
    "audit_records": (
        "scene_id", "model", "input_hash", "decision", "approval_id", "error_code", "message",
    ),
    "timeline": ("facts",),
}  # fmt: skip

# Every view and its deterministic order, so two dumps compare with ``==``.
VIEWS: dict[str, str] = {
    "runs": "run_id",
    "actions": "run_id, operation_id",
    "audit_records": "stream_seq",
    "timeline": "stream_seq",
    "dead_letters": "stream_seq",
}


@dataclass(frozen=True)
class Applied:
    """What applying an event did: ``new`` is False when its sequence had been applied
    before (nothing was written), and ``records`` are the audit records the event
    produced either way, so a redelivery publishes them again."""

    new: bool
    records: list[Row] = field(default_factory=list)
