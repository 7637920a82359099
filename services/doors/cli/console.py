"""How the CLI shows a run: live progress lines, the final receipt table, approvals."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from contracts.events import AnyEvent, ApprovalRequested, ApprovalResolved, Approved, Planned
from contracts.geonodes import step_of
from contracts.progress import ProgressLine
from contracts.receipts import ApprovalAsk, RunResult
from contracts.trusted_code import numbered, trusted_code, visible


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
    if result.status == "completed" and any(
        r.tool_name == "scene.snapshot" for r in result.receipts
    ):
        # "describe the scene": the run's answer is the description (contracts.snapshot_text).
        console.print(result.message, markup=False, highlight=False)
    if result.status == "completed" and not result.receipts:
        # Answered in words (run.replied, spec 002 §4.5): nothing ran, no scene was saved.
        console.print(result.message, markup=False, highlight=False)
    elif result.status == "completed":
        preview = Path(result.blend_path).with_suffix(".png") if result.blend_path else None
        shown = f" (preview: {preview})" if preview is not None and preview.exists() else ""
        console.print(f"Saved scene [cyan]{result.scene_id}[/] to {result.blend_path}{shown}")
    elif result.status == "awaiting_confirmation" and result.approval is not None:
        print_approval(console, result.run_id, result.approval)
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


def approve_command(run_id: str, approval: ApprovalAsk) -> str:
    """The command that approves ``approval``, quoting the hash of any trusted code."""
    quoted = "".join(f" --code-sha256 {h}" for h in approval.code_sha256)
    return f"blendmesh approve {run_id}{quoted}"


def approval_lines(run_id: str, approval: ApprovalAsk) -> list[str]:
    """What a person reads before approving: every operation exactly as it would run, and
    each trusted Python step's code in full, numbered, with the hash an approval quotes."""
    lines = [f"Run {run_id} waits for your approval: {approval.reason}"]
    code = {t.operation_id: t for t in trusted_code(approval.operations)}
    for op in approval.operations:
        trusted = code.get(op.operation_id)
        # The code is shown as a block below; in the arguments it would be one long line.
        args = {k: v for k, v in op.args.items() if not (trusted and k == "code")}
        shown = visible(json.dumps(args, ensure_ascii=False, separators=(", ", ": ")))
        lines.append(f"  {op.operation_id} {op.tool} ({op.safety_level}) {shown}")
        if trusted is not None:
            lines.append(f"    trusted Python, {trusted.code_sha256}:")
            lines += [f"    {line}" for line in numbered(trusted.code)]
    lines.append(f"  approve: {approve_command(run_id, approval)}")
    lines.append(f"  reject:  blendmesh reject {run_id}")
    return lines


def print_approval(console: Console, run_id: str, approval: ApprovalAsk) -> None:
    text = "\n".join(approval_lines(run_id, approval))
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
