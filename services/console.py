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

from contracts.events import (
    AnyEvent,
    ApprovalRequested,
    Approved,
    Denied,
    OperationFailed,
    OperationRolledBack,
    OperationSkipped,
    OperationSucceeded,
    Planned,
    PlanRejected,
    PolicyDecided,
    RunCompleted,
    RunFailed,
    RunRequested,
)
from contracts.receipts import RunResult


def short(value: str | None, n: int = 12) -> str:
    return (value or "-")[:n]


def progress_line(event: AnyEvent) -> str | None:
    """One line of live progress for an event, or None for events not worth a line."""
    match event:
        case RunRequested():
            return f"[bold]run {event.run_id}[/] on scene [cyan]{event.scene_id}[/]"
        case Planned():
            ops = ", ".join(
                f"{o.operation_id} {o.tool_name}" for o in event.operation_set.operations
            )
            by = f"{event.planner} {event.model}" if event.model else event.planner
            again = f", iteration {event.iteration}" if event.iteration > 1 else ""
            return f"  planned {len(event.schedule)} operations ({by}{again}): {ops}"
        case PolicyDecided():
            asks = [d for d in event.decisions if d.mode != "allow"]
            if not asks:
                return "  policy: every operation allowed"
            return "  policy: " + escape(
                "; ".join(f"{d.operation_id} {d.mode} ({d.reason})" for d in asks)
            )
        case PlanRejected():
            code = event.failure.error_code
            model = f" ({event.model})" if event.model else ""
            return f"  [red]plan rejected[/] ({code}) by the {event.planner} planner{model}"
        case ApprovalRequested():
            return f"  [yellow]waiting for approval[/] of {', '.join(event.operation_ids)}"
        case Approved() if event.approved_by != "policy":
            return f"  approved by {event.approved_by}"
        case OperationSucceeded():
            r = event.receipt
            return f"  [green]✓[/] {r.operation_id} {r.tool_name} {r.duration_ms:.1f} ms"
        case OperationFailed():
            r = event.receipt
            return (
                f"  [red]✗[/] {r.operation_id} {r.tool_name}: {r.error_code}: {escape(r.message)}"
            )
        case OperationRolledBack():
            return f"  [yellow]↺[/] {event.operation_id} rolled back ({event.method})"
        case OperationSkipped():
            return f"  - {event.operation_id} skipped: {escape(event.reason)}"
        case Denied():
            return f"  [red]denied[/]: {escape(event.message)}"
        case RunCompleted():
            return f"[green]completed[/]: {escape(event.summary)}"
        case RunFailed():
            return f"[red]failed[/] ({event.failure.error_code}): {escape(event.message)}"
    return None


def receipt_table(result: RunResult) -> Table:
    by = " ".join(p for p in (result.planner, result.model) if p)
    title = f"run {result.run_id} · {result.status}" + (f" · {by}" if by else "")
    table = Table(title=title, min_width=len(title))  # a title that fits stays on one line
    for column in ("operation", "tool", "status", "ms", "scene hash"):
        table.add_column(column, justify="right" if column == "ms" else "left")
    for r in result.receipts:
        table.add_row(
            r.operation_id,
            r.tool_name,
            r.status,
            f"{r.duration_ms:.1f}",
            short(r.scene_hash_after or r.scene_hash_before),
        )
    return table


def print_result(console: Console, result: RunResult) -> None:
    if result.receipts:
        console.print(receipt_table(result))
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
