"""What a run's result says, as words with no rich in them: the receipts' rows and the lines
after them. ``console.print_result`` draws them with rich on a terminal; piped, a command
prints them as plain lines (``services/doors/cli/screen.py``), so a script that runs
``blendmesh run`` does not wait for rich to be imported.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

from contracts.geonodes import step_of
from contracts.receipts import RunResult
from contracts.trusted_code import numbered, trusted_code, visible
from services.doors.core.run_view import Pending, RunView

RIGHT = frozenset({"ms"})  # columns whose cells are aligned right
COLUMN_GAP = "  "  # between the columns of a piped receipt table


def short(value: str | None, n: int = 12) -> str:
    return (value or "-")[:n]


class Receipts(NamedTuple):
    """A run's receipts as a table: its title, column names and one row per operation."""

    title: str
    columns: tuple[str, ...]
    rows: list[tuple[str, ...]]


def receipts(result: RunResult) -> Receipts:
    by = " ".join(p for p in (result.planner, result.model) if p)
    title = f"run {result.run_id} · {result.status}" + (f" · {by}" if by else "")
    # The step column only for a plan compiled from a Geometry Nodes response (spec 004).
    steps = [step_of(r.operation_id) for r in result.receipts]
    columns = ("step",) * any(steps) + ("operation", "tool", "status", "ms", "scene hash")
    rows = []
    for r, step in zip(result.receipts, steps, strict=True):
        cells = (
            r.operation_id,
            r.tool_name,
            r.status,
            f"{r.duration_ms:.1f}",
            short(r.scene_hash_after or r.scene_hash_before),
        )
        rows.append((*((step or "-",) * any(steps)), *cells))
    return Receipts(title, columns, rows)


def receipt_lines(table: Receipts) -> list[str]:
    """The table as aligned columns, one row a line: what grep and a script read."""
    rows = [table.columns, *table.rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(table.columns))]
    lines = [table.title]
    for row in rows:
        cells = (
            cell.rjust(width) if name in RIGHT else cell.ljust(width)
            for cell, width, name in zip(row, widths, table.columns, strict=True)
        )
        lines.append(COLUMN_GAP.join(cells).rstrip())
    return lines


class Line(NamedTuple):
    """One line after the receipts: its parts, each with the rich style a terminal shows it
    in ("" for none), and whether a terminal may colour what it recognises in it."""

    parts: tuple[tuple[str, str], ...]
    highlight: bool = False

    @property
    def text(self) -> str:
        return "".join(text for text, _ in self.parts)


def _plain(text: str, highlight: bool = False) -> Line:
    return Line(((text, ""),), highlight)


def said(view: RunView) -> list[Line]:
    """Everything a run's view says below its receipts."""
    lines: list[Line] = []
    result, gates = view.result, view.gates
    if gates is not None and gates.success:
        lines.append(Line((("gates passed", "green"),)))
    elif gates is not None:
        failed = ", ".join(gates.failed_gates)
        lines.append(Line((("gates failed", "red"), (f" ({failed}):", ""))))
        lines += [_plain(f"  {message}") for message in gates.messages]
    if view.described:
        # "describe the scene": the run's answer is the description (contracts.snapshot_text).
        lines.append(_plain(view.message))
    if view.replied:
        # Answered in words (run.replied, spec 002 §4.5): nothing ran, no scene was saved.
        lines.append(_plain(view.message))
    elif view.status == "completed":
        preview = Path(result.blend_path).with_suffix(".png") if result.blend_path else None
        shown = f" (preview: {preview})" if preview is not None and preview.exists() else ""
        parts = (("Saved scene ", ""), (result.scene_id, "cyan"), (f" to {result.blend_path}", ""))
        lines.append(Line((*parts, (shown, "")), highlight=True))
    elif (pending := view.pending) is not None:
        lines += [_plain(line) for line in approval_lines(pending)]
    elif view.status == "awaiting_confirmation":  # a result that does not say what it asks
        ops = ", ".join(view.awaited)
        lines.append(_plain(f"Run {view.run_id} waits for approval of {ops}.", True))
        lines.append(_plain(f"  approve: blendmesh approve {view.run_id}", True))
        lines.append(_plain(f"  reject:  blendmesh reject {view.run_id}", True))
    elif (failure := view.failure) is not None:
        lines.append(Line(((failure.code, "red"), (f": {failure.message}", ""))))
        lines.append(_plain(f"hint: {failure.hint}"))
    return lines


def result_lines(result: RunResult) -> list[str]:
    """A run's result as a pipe reads it."""
    table = receipt_lines(receipts(result)) if result.receipts else []
    return table + [line.text for line in said(RunView.of_result(result))]


def approval_lines(pending: Pending) -> list[str]:
    """What a person reads before approving: every operation exactly as it would run, and
    each trusted Python step's code in full, numbered, with the hash an approval quotes."""
    lines = [f"Run {pending.run_id} waits for your approval: {pending.reason}"]
    code = {t.operation_id: t for t in trusted_code(pending.operations)}
    for op in pending.operations:
        trusted = code.get(op.operation_id)
        # The code is shown as a block below; in the arguments it would be one long line.
        args = {k: v for k, v in op.args.items() if not (trusted and k == "code")}
        shown = visible(json.dumps(args, ensure_ascii=False, separators=(", ", ": ")))
        lines.append(f"  {op.operation_id} {op.tool} ({op.safety_level}) {shown}")
        if trusted is not None:
            lines.append(f"    trusted Python, {trusted.code_sha256}:")
            lines += [f"    {line}" for line in numbered(trusted.code)]
    lines.append(f"  approve: {pending.approve_command}")
    lines.append(f"  reject:  {pending.reject_command}")
    return lines
