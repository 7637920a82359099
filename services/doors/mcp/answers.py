"""Tool answers as MCP results: structured content, a text a person can read, images."""

from __future__ import annotations

import base64
import json
from typing import Any

import mcp.types as types

from contracts.events import ApprovalRequested
from contracts.receipts import RunResult
from contracts.trusted_code import code_hashes, numbered, trusted_code, visible
from services.doors.mcp.door import plain
from services.doors.mcp.errors import ToolError, failure_type


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def result(
    summary: str, data: dict[str, Any], images: list[bytes] | None = None, *, error: bool = False
) -> types.CallToolResult:
    """``data`` as structured content and as JSON text after a one-line ``summary``."""
    content: list[types.ContentBlock] = [
        types.TextContent(type="text", text=f"{summary}\n{_json(data)}")
    ]
    for png in images or []:
        content.append(
            types.ImageContent(
                type="image", data=base64.b64encode(png).decode(), mimeType="image/png"
            )
        )
    return types.CallToolResult(content=content, structuredContent=data, isError=error)


def tool_error(exc: ToolError) -> types.CallToolResult:
    """A tool error: the spec 002 class and a safe message."""
    body = {"error": {"type": exc.type_name, "message": str(exc)}}
    text = f"{exc.type_name}: {exc}"
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structuredContent=body, isError=True
    )


def approve_command(pending: ApprovalRequested) -> str:
    """The CLI command that approves ``pending``, quoting the hash of any trusted code."""
    quoted = "".join(f" --code-sha256 {h}" for h in code_hashes(pending.operations))
    return f"blendmesh approve {pending.run_id}{quoted}"


def approval_out(pending: ApprovalRequested) -> dict[str, Any]:
    return {
        "approval_id": pending.approval_id,
        "reason": pending.reason,
        "operations": [plain(op) for op in pending.operations],
        "code_sha256": code_hashes(pending.operations),
        "approve_command": approve_command(pending),
        "reject_command": f"blendmesh reject {pending.run_id}",
    }


def run_answer(
    run: RunResult,
    pending: ApprovalRequested | None,
    scene: dict[str, Any] | None,
    preview: bytes | None,
) -> types.CallToolResult:
    """A run's answer; a failed run is a tool error of its failure's 002 class."""
    data = plain(run)
    data["ok"] = run.status == "completed"
    data["scene"] = scene
    data["approval"] = None
    summary = f"run {run.run_id} on scene {run.scene_id}: {run.status}"
    if run.receipts:
        done = sum(1 for r in run.receipts if r.status == "succeeded")
        summary += f" ({done} of {len(run.receipts)} operations succeeded)"
    elif run.status == "completed":  # answered in words (spec 002 §4.5): nothing ran
        summary += f": {run.message}"
    if run.status == "failed" and run.failure is not None:
        kind = failure_type(run.failure.error_code)
        data["error"] = {"type": kind, "message": run.message or run.failure.retry_hint}
        summary += f"; {kind} {run.failure.error_code}: {run.failure.retry_hint}"
    if run.status == "awaiting_confirmation" and pending is not None:
        data["approval"] = approval_out(pending)
        ops = ", ".join(f"{op.operation_id} {op.tool}" for op in pending.operations)
        summary += (
            f"; it waits for a person to approve {ops} (approval {pending.approval_id}). "
            f"No tool can approve it: the person runs `{approve_command(pending)}` "
            f"(or `blendmesh reject {run.run_id}`), then `run_status` shows the outcome"
        )
    images = [preview] if preview else []
    return result(summary, data, images, error=run.status == "failed")


def approval_question(pending: ApprovalRequested) -> str:
    """What the host shows the person: every operation exactly as it would run, and each
    trusted Python step's code in full with the hash that accepting quotes."""
    lines = [f"blendmesh asks you to approve run {pending.run_id}: {pending.reason}"]
    code = {t.operation_id: t for t in trusted_code(pending.operations)}
    for op in pending.operations:
        trusted = code.get(op.operation_id)
        args = {k: v for k, v in op.args.items() if not (trusted and k == "code")}
        lines.append(f"- {op.operation_id} {op.tool} ({op.safety_level}) {visible(_json(args))}")
        if trusted is not None:
            lines.append(f"  trusted Python, {trusted.code_sha256}:")
            lines += [f"  {line}" for line in numbered(trusted.code)]
    exactly = ", this code exactly as shown" if code else ""
    lines.append(f"Accept to run these operations once{exactly}; decline to reject the run.")
    return "\n".join(lines)
