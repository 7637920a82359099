"""Request/reply messages of the read side: the audit service answers, the CLI and gateway ask.

Queries travel on core NATS request/reply (``subjects.query(prefix, name)``), outside the
event log: they change nothing, so there is nothing to record. Every reply carries ``ok``
and, when it is false, an ``error`` that says what to do, so a client never has to guess
from a timeout or a half-filled row. Rows mirror the audit views column for column.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from contracts.receipts import ActionState, RunState

MAX_RUNS = 1000
# Rows of a run's detail one page may hold: the audit service sends fewer when they would
# not fit one message (ADR 0076). A page's rows are read and measured together, so this
# bounds the work of one page too.
MAX_PAGE_ROWS = 2000
# How far into a run's rows a page may start: far past any run the mesh accepts (a plan
# of BLENDMESH_MAX_OPERATIONS operations, repaired a few times, is some thousands).
MAX_RUN_ROWS = 100_000
MAX_SEQ = 2**63 - 1  # a stream sequence, as SQLite stores it


class _Message(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


# -- requests --------------------------------------------------------------------------


class RunsQuery(_Message, frozen=True, kw_only=True):
    """The newest runs first (``runs``), of every user or of one."""

    limit: Annotated[int, msgspec.Meta(ge=1, le=MAX_RUNS)] = 50
    user: Annotated[str, msgspec.Meta(min_length=1, max_length=128)] | None = None
    # Only runs not yet completed or failed: under way, or waiting for a person.
    active: bool = False


class RunQuery(_Message, frozen=True, kw_only=True):
    """One page of a run with its actions, audit records and timeline (``run``).

    The run's rows are numbered in one sequence: its actions (by operation id), then its
    audit records and its timeline (each in log order). A page holds up to ``limit`` of
    them from ``offset``, fewer when more would not fit one message, and its reply says
    where the next page starts. ``upto_seq`` is the first page's: later pages read the
    records and timeline only up to it, so the pages add up to one state of the run
    (``services.audit.client.query_run`` asks for them all).
    """

    run_id: Annotated[str, msgspec.Meta(min_length=1, max_length=128)]
    offset: Annotated[int, msgspec.Meta(ge=0, le=MAX_RUN_ROWS)] = 0
    limit: Annotated[int, msgspec.Meta(ge=1, le=MAX_PAGE_ROWS)] = MAX_PAGE_ROWS
    upto_seq: Annotated[int, msgspec.Meta(ge=0, le=MAX_SEQ)] | None = None


class DumpQuery(_Message, frozen=True, kw_only=True):
    """Every view, ordered deterministically (``dump``): tests and rebuild verification."""


class RebuildCommand(_Message, frozen=True, kw_only=True):
    """Replay the whole log into fresh views and swap them in (``rebuild``)."""


# -- rows --------------------------------------------------------------------------------


class RunRow(_Message, frozen=True, kw_only=True):
    """One run as the ``runs`` view holds it: its folded state and where its scene ended."""

    run_id: str
    request_id: str
    thread_id: str
    user: str
    scene_id: str | None
    prompt: str | None
    state: RunState | None
    planner: str | None
    model: str | None
    error_code: str | None
    message: str | None
    blend_path: str | None
    scene_hash: str | None
    created_at: float
    updated_at: float
    # What a run made without words does ("import a .blend (76.7 MB)"); None for a
    # request in words, and in rows projected before it was kept.
    plan_words: str | None = None


class ActionRow(_Message, frozen=True, kw_only=True):
    """One operation of a run as the ``actions`` view holds it: its state and decision."""

    run_id: str
    operation_id: str
    tool_name: str | None
    safety_level: str | None
    state: ActionState | None
    decision: str | None  # allow | require_approval | deny, once the policy decided
    mcp_call_id: str | None
    blender_mutation_id: str | None
    error_code: str | None
    approval_id: str | None = None  # the approval that asked a person about it, if any
    input_hash: str | None = None  # "sha256:<hex>" of its canonical args (spec 002 §9)
    # Seconds since the epoch (spec 002 §9 timestamps): when the plan that holds it was
    # made, and when an event last changed it. None in views projected before they existed.
    created_at: float | None = None
    updated_at: float | None = None


class AuditRecord(_Message, frozen=True, kw_only=True):
    """The spec 000 minimum audit record and the spec 002 §9 fields of one action, plus
    where it sits in the log. Views projected before the 002 fields existed hold None in
    them until ``blendmesh audit rebuild``."""

    stream_seq: int
    event_id: str
    run_id: str
    user: str
    timestamp: float
    request_id: str
    operation_id: str
    mcp_call_id: str | None
    blender_mutation_id: str | None  # null for read-only operations
    tool_name: str | None
    safety_level: str | None
    # succeeded | failed | rolled_back | skipped_idempotent; for the guardians' record of a
    # revision (operation_id "gates@<revision>"): gates_passed | gates_failed:<GATE,...>
    status: str
    scene_hash_before: str | None
    scene_hash_after: str | None
    # spec 002 §9: who decided, on what input, and how it ended
    scene_id: str | None = None
    model: str | None = None  # the model that planned the operation; None for plans as written
    input_hash: str | None = None  # "sha256:<hex>" of the operation's canonical args
    decision: str | None = None  # the policy's mode: allow | require_approval | deny
    approval_id: str | None = None
    error_code: str | None = None
    message: str | None = None


class TimelineEntry(_Message, frozen=True, kw_only=True):
    """One event of a run as a person reads it, in log order."""

    stream_seq: int
    run_id: str
    event_id: str
    type: str
    at: float
    detail: str
    # What the event says, as data (services/audit/timeline_facts.py): operations and
    # their arguments, receipts, decisions, approvers, gates, revision, versions. {} in a
    # view made before them, until ``blendmesh audit rebuild``.
    facts: dict[str, Any] = {}


class RunDetail(_Message, frozen=True, kw_only=True):
    """Everything the audit views know about one run: its row, actions, records, timeline
    (in a ``RunReply``, the rows of one page of them)."""

    run: RunRow
    actions: list[ActionRow] = []
    audit_records: list[AuditRecord] = []
    timeline: list[TimelineEntry] = []


# -- replies -----------------------------------------------------------------------------


class Reply(_Message, frozen=True, kw_only=True):
    """``ok`` or an ``error`` naming the fix; ``last_seq`` is the views' applied sequence."""

    ok: bool
    error: str = ""
    last_seq: int = 0


class RunsReply(Reply, frozen=True, kw_only=True):
    """The answer to a ``RunsQuery``, newest run first."""

    runs: list[RunRow] = []


class RunPage(_Message, frozen=True, kw_only=True):
    """Where one page of a run's rows sits among them, and where the next one starts."""

    offset: int  # the first row of this page
    next_offset: int | None  # None: this page is the last
    rows: int  # the run's rows up to ``upto_seq``: actions, audit records, timeline
    # The run's last event this page reads up to (the views' stream sequence); a later
    # page asked with it adds up with this one.
    upto_seq: int
    # The run has events after ``upto_seq``: its actions (kept up to date, not in log
    # order) may have changed since the first page.
    moved: bool = False


class RunReply(Reply, frozen=True, kw_only=True):
    """The answer to a ``RunQuery``: ``detail`` (one page of rows) and ``page`` are set
    whenever ``ok`` is."""

    detail: RunDetail | None = None
    page: RunPage | None = None


class DumpReply(Reply, frozen=True, kw_only=True):
    """The answer to a ``DumpQuery``: each view's rows, by view name."""

    views: dict[str, list[dict[str, Any]]] = {}


class RebuildReply(Reply, frozen=True, kw_only=True):
    """The answer to a ``RebuildCommand``: how many rows each rebuilt view holds."""

    counts: dict[str, int] = {}  # rows per view after the rebuild
