"""Tool answers as MCP results: structured content, a text a person can read, images."""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any, Protocol

import mcp.types as types

from contracts.receipts import RunResult
from contracts.trusted_code import AskedOperation, code_hashes, numbered, trusted_code, visible
from services.doors.core.run_view import Pending, RunView, approve_command, reject_command
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


class ShownOperation(AskedOperation, Protocol):
    @property
    def safety_level(self) -> str: ...


class Asked(Protocol):
    """An approval as this door words it: a run view's ``Pending`` (the policy's
    ``ApprovalRequested`` reads alike)."""

    @property
    def run_id(self) -> str: ...

    @property
    def approval_id(self) -> str: ...

    @property
    def reason(self) -> str: ...

    @property
    def operations(self) -> Sequence[ShownOperation]: ...


def approval_out(pending: Asked) -> dict[str, Any]:
    hashes = code_hashes(pending.operations)
    return {
        "approval_id": pending.approval_id,
        "reason": pending.reason,
        "operations": [plain(op) for op in pending.operations],
        "code_sha256": hashes,
        "approve_command": approve_command(pending.run_id, hashes),
        "reject_command": reject_command(pending.run_id),
    }


def run_answer(
    run: RunResult,
    pending: Pending | None,
    scene: dict[str, Any] | None,
    preview: bytes | None,
) -> types.CallToolResult:
    """A run's answer, read from its view; a failed run is a tool error of its failure's 002
    class. ``pending`` is the view's approval, shown while the run waits on it."""
    view = RunView.of_result(run)
    data = plain(run)
    data["ok"] = view.status == "completed"
    data["scene"] = scene
    data["approval"] = None
    summary = f"run {view.run_id} on scene {view.scene_id}: {view.status}"
    if view.receipts:
        summary += f" ({view.succeeded} of {len(view.receipts)} operations succeeded)"
    elif view.replied:  # answered in words (spec 002 §4.5): nothing ran
        summary += f": {view.message}"
    if (failed := view.failure) is not None:
        kind = failure_type(failed.code)
        data["error"] = {"type": kind, "message": failed.message or failed.hint}
        summary += f"; {kind} {failed.code}: {failed.hint}"
    if view.status == "awaiting_confirmation" and pending is not None:
        data["approval"] = approval_out(pending)
        ops = ", ".join(f"{op.operation_id} {op.tool}" for op in pending.operations)
        summary += (
            f"; it waits for a person to approve {ops} (approval {pending.approval_id}). "
            f"No tool can approve it: the person runs `{pending.approve_command}` "
            f"(or `{pending.reject_command}`), then `run_status` shows the outcome"
        )
    images = [preview] if preview else []
    return result(summary, data, images, error=view.status == "failed")


def approval_question(pending: Asked) -> str:
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
