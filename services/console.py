"""How the CLI shows a run: live progress lines and the final receipt table."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from contracts.geonodes import step_of
from contracts.progress import ProgressLine
from contracts.receipts import RunResult


def short(value: str | None, n: int = 12) -> str:
    return (value or "-")[:n]


_STYLES = {"plain": "", "strong": "bold", "ok": "green", "warn": "yellow", "error": "red"}


def render(line: ProgressLine) -> str:
    """``line`` as rich markup: its mark in the colour of its tone, the rest as it is."""
    style = _STYLES[line.tone]
    mark = escape(line.mark)
    if style and mark:
        mark = f"[{style}]{mark}[/]"
    return " " * line.indent + mark + escape(line.rest)


def receipt_table(result: RunResult) -> Table:
    by = " ".join(p for p in (result.planner, result.model) if p)
    title = f"run {result.run_id} · {result.status}" + (f" · {by}" if by else "")
    table = Table(title=title, min_width=len(title))  # a title that fits stays on one line
    # The step column only for a plan compiled from a Geometry Nodes response (spec 004).
    steps = [step_of(r.operation_id) for r in result.receipts]
    columns = ("step",) * any(steps) + ("operation", "tool", "status", "ms", "scene hash")
    for column in columns:
        table.add_column(column, justify="right" if column == "ms" else "left")
    for r, step in zip(result.receipts, steps, strict=True):
        cells = (
            r.operation_id,
            r.tool_name,
            r.status,
            f"{r.duration_ms:.1f}",
            short(r.scene_hash_after or r.scene_hash_before),
        )
        table.add_row(*((step or "-",) * any(steps)), *cells)
    return table


def print_result(console: Console, result: RunResult) -> None:
    if result.receipts:
        console.print(receipt_table(result))
    if result.gates is not None and result.gates.success:
        console.print("[green]gates passed[/]", highlight=False)
    elif result.gates is not None:
        failed = ", ".join(result.gates.failed_gates)
        console.print(f"[red]gates failed[/] ({escape(failed)}):", highlight=False)
        for said in result.gates.messages:
            console.print(f"  {escape(said)}", highlight=False)
    if result.status == "completed":
        preview = Path(result.blend_path).with_suffix(".png") if result.blend_path else None
        shown = f" (preview: {preview})" if preview is not None and preview.exists() else ""
        console.print(f"Saved scene [cyan]{result.scene_id}[/] to {result.blend_path}{shown}")
    elif result.status == "awaiting_confirmation":
        ops = ", ".join(result.pending_operations)
        console.print(
            f"Run {result.run_id} waits for approval of {ops}.\n"
            f"  approve: blendmesh approve {result.run_id}\n"
            f"  reject:  blendmesh reject {result.run_id}"
        )
    elif result.failure is not None:
        console.print(
            f"[red]{result.failure.error_code}[/]: {escape(result.message)}", highlight=False
        )
        console.print(f"hint: {result.failure.retry_hint}", markup=False, highlight=False)


def as_rows(structs: Sequence[Any]) -> list[dict[str, Any]]:
    rows = msgspec.to_builtins(list(structs))
    for row in rows:
        if isinstance(row.get("timestamp"), float):
            row["timestamp"] = datetime.fromtimestamp(row["timestamp"], UTC).strftime(
                "%Y-%m-%d %H:%M:%S"
            )
        for key in ("scene_hash_before", "scene_hash_after", "mcp_call_id", "blender_mutation_id"):
            if isinstance(row.get(key), str):
                row[key] = short(row[key], 10)
    return rows


def rows_table(title: str, rows: list[dict[str, Any]], columns: list[str]) -> Table:
    table = Table(title=title)
    for column in columns:
        # Ids are what users copy into the next command: never cut them short.
        whole = max((len(str(row.get(column) or "")) for row in rows), default=0)
        is_id = column.endswith("_id")
        table.add_column(column, overflow="fold", no_wrap=is_id, min_width=whole if is_id else None)
    for row in rows:
        table.add_row(*(str(row.get(c)) if row.get(c) is not None else "-" for c in columns))
    return table
