"""How the CLI shows a run: live progress lines, the final receipt table, approvals."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import msgspec
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from contracts.events import AnyEvent, ApprovalRequested, ApprovalResolved, Approved, Planned
from contracts.progress import ProgressLine
from contracts.receipts import RunResult
from contracts.trusted_code import visible
from services.doors.cli import plain
from services.doors.cli.plain import short
from services.doors.core.run_view import Pending, RunView

_STYLES = {"plain": "", "strong": "bold", "ok": "green", "warn": "yellow", "error": "red"}


def render(line: ProgressLine) -> str:
    """``line`` as rich markup: its mark in the colour of its tone, the rest as it is."""
    style = _STYLES[line.tone]
    mark = escape(line.mark)
    if style and mark:
        mark = f"[{style}]{mark}[/]"
    return " " * line.indent + mark + escape(line.rest)


def receipt_table(result: RunResult) -> Table:
    table_of = plain.receipts(result)
    # A title that fits stays on one line.
    table = Table(title=table_of.title, min_width=len(table_of.title))
    for column in table_of.columns:
        table.add_column(column, justify="right" if column in plain.RIGHT else "left")
    for row in table_of.rows:
        table.add_row(*row)
    return table


def print_result(console: Console, result: RunResult) -> None:
    if result.receipts:
        console.print(receipt_table(result))
    for line in plain.said(RunView.of_result(result)):
        marked = "".join(
            f"[{style}]{escape(text)}[/]" if style else escape(text) for text, style in line.parts
        )
        console.print(marked, highlight=line.highlight, emoji=False)


def print_approval(console: Console, pending: Pending) -> None:
    text = "\n".join(plain.approval_lines(pending))
    console.print(text, markup=False, highlight=False, emoji=False)


ARGS_SHOWN = 200  # characters of an operation's arguments in a table; the log has them all


def _args_cell(args: dict[str, Any]) -> str:
    text = visible(json.dumps(args, ensure_ascii=False, separators=(",", ":")))
    return text if len(text) <= ARGS_SHOWN else text[: ARGS_SHOWN - 1] + "…"


def operation_details(events: Sequence[AnyEvent]) -> dict[str, dict[str, str]]:
    """For ``blendmesh audit``: each operation's arguments as last planned, and who let it
    run (``policy`` when no person was asked) or which person rejected it."""
    details: dict[str, dict[str, str]] = {}
    asked: dict[str, list[str]] = {}
    for event in events:
        match event:
            case Planned():
                for op in event.operation_set.operations:
                    details.setdefault(op.operation_id, {})["args"] = _args_cell(op.args)
            case ApprovalRequested():
                asked[event.approval_id] = list(event.operation_ids)
            case ApprovalResolved() if event.decision == "reject":
                for op_id in asked.get(event.approval_id, []):
                    details.setdefault(op_id, {})["approved_by"] = (
                        f"rejected by {event.resolved_by}"
                    )
            case Approved():
                for op_id in event.schedule:
                    details.setdefault(op_id, {})["approved_by"] = event.approved_by
    return details


def as_rows(structs: Sequence[Any]) -> list[dict[str, Any]]:
    rows = msgspec.to_builtins(list(structs))
    for row in rows:
        if isinstance(row.get("timestamp"), float):
            row["timestamp"] = _utc(row["timestamp"])
        if isinstance(row.get("created_at"), float):
            row["created"] = _utc(row["created_at"])
        if isinstance(row.get("updated_at"), float):
            row["updated"] = _utc(row["updated_at"])
        if "prompt" in row:
            row["request"] = request_text(row["prompt"])
        for key in ("scene_hash_before", "scene_hash_after", "mcp_call_id", "blender_mutation_id"):
            if isinstance(row.get(key), str):
                row[key] = short(row[key], 10)
    return rows


REQUEST_SHOWN = 60  # characters of a request in the runs table
REQUEST_WHOLE = 4000  # in `audit RUN`: as long as the longest prompt the gateway takes


def request_text(prompt: str | None, n: int = REQUEST_SHOWN) -> str:
    """A request as a table shows it: a plan run as written has no words of its own."""
    if prompt is None:
        return "(plan as written)"
    text = visible(" ".join(prompt.split()))
    return text if len(text) <= n else text[: n - 1] + "…"


def _utc(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S")


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
