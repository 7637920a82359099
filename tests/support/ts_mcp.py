"""The official TypeScript SDK's MCP clients driving blendmesh as a host would: both client
lines (``@modelcontextprotocol/sdk`` 1.x on 2025-11-25, ``@modelcontextprotocol/client``
2.x on 2026-07-28) run ``examples/typescript/mcp_client.ts`` under tsx, on stdio or at
``/mcp``, and the JSON report it prints is checked here: what every test of a line on a
transport asserts alike."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

CLIENT_WAIT = 150  # seconds a session may take; under the tests' own timeout (180)
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "typescript"
TSX = EXAMPLES / "node_modules" / ".bin" / "tsx"
LINES = {  # the argument the program takes, the package it drives, the revision it speaks
    "sdk-1.x": ("1", "@modelcontextprotocol/sdk", "2025-11-25"),
    "client-2.x": ("2", "@modelcontextprotocol/client", "2026-07-28"),
}
PNG = "89504e470d0a1a0a"  # the first eight bytes of every PNG file


def missing() -> str | None:
    """Why the program cannot run here (no Node, or the SDKs not installed); None if it can."""
    if shutil.which("node") is None:
        return "Node is not installed (the TypeScript SDK's clients run under it)"
    packages = EXAMPLES / "node_modules" / "@modelcontextprotocol"
    if not (TSX.exists() and (packages / "sdk").is_dir() and (packages / "client").is_dir()):
        return (
            "the TypeScript SDKs are not installed: npm ci --prefix examples/typescript "
            "(as .ci/run does)"
        )
    return None


async def drive(line: str, scene: str, *where: str) -> dict[str, Any]:
    """What ``line``'s client saw in one session on ``scene``. ``where``: ``"stdio",
    server_json`` or ``"http", url, token``."""
    process = await asyncio.create_subprocess_exec(
        str(TSX), "mcp_client.ts", LINES[line][0], scene, *where,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(EXAMPLES),
    )  # fmt: skip
    try:
        out, err = await asyncio.wait_for(process.communicate(), CLIENT_WAIT)
    except TimeoutError:
        process.kill()
        raise
    said = err.decode(errors="replace")[-6000:]
    assert process.returncode == 0, f"the {line} client failed:\n{said}"
    report: dict[str, Any] = json.loads(out)
    report["stderr"] = said
    return report


def check(report: dict[str, Any], line: str) -> None:
    """What a host's session on either line must have seen; AssertionError naming what not."""
    _, package, version = LINES[line]
    seen = json.dumps({k: v for k, v in report.items() if k != "stderr"}, indent=1)[:8000]
    assert report["line"] == package and report["protocol_version"] == version, seen

    # Every declared schema compiles in the SDK's validator; every answer matches its own.
    tools = {t["name"]: t for t in report["tools"]}
    assert {"run", "run_status", "cancel_run", "inspect_object", "render_view"} <= set(tools)
    for tool in tools.values():
        assert tool["input_schema"] == {"ok": True}, tool
        assert tool["output_schema"] == {"ok": True}, tool
    called = {c["tool"] for c in report["calls"]}
    # Every tool but the upload, a fork (its revert would be a fourth question to answer)
    # and a stored frame (a render job cancelled at once stores none): tests/integration/
    # test_mcp_steer.py and test_gateway_renders.py call those through the SDK's server.
    assert set(tools) - {"import_asset", "fork_run", "render_frame"} <= called, called
    assert all(c["matches_output_schema"] is True for c in report["calls"]), report["calls"]
    assert any(c["is_error"] for c in report["calls"])  # the declined run: its error answer too

    made = report["made"]
    assert made["status"] == "completed" and made["tools_run"] == ["object.create"], seen
    assert "Box" in made["objects"] and "Box" in report["resources"]["scene_objects"], seen
    assert report["resources"]["catalog_names_delete"] is True
    assert "object.create" in report["found"]["core"], seen  # the catalog found on demand
    assert report["inspected"]["name"] == "Box", seen
    more = report["more"]
    assert more["exported_format"] == "glb" and more["changes_revision"] >= 1, seen
    assert more["rerun_status"] == "completed", seen
    assert more["rerun_receipts"] == ["skipped_idempotent"], seen
    assert more["render_cancelled"] == "cancelled" == more["render_read"], seen
    rendered = report["rendered"]
    assert "image" in rendered["content"] and rendered["mime_type"] == "image/png", seen
    assert rendered["png"] == PNG, seen

    # Asked once each through the SDK's own handling; decline rejects, accept approves.
    declined, approved = report["declined"], report["approved"]
    assert declined["asked"] == 1 and approved["asked"] == 1, seen
    assert declined["failure"] == "APPROVAL_REJECTED" and declined["tools_run"] == [], seen
    assert "Box" in declined["objects"], seen  # rejected: nothing was deleted
    assert approved["status"] == "completed" and approved["tools_run"] == ["object.delete"], seen
    assert "Box" not in approved["objects"], seen
    first, second, third = report["asked"]
    assert f"approve run {declined['run_id']}" in first and "object.delete" in first
    assert f"approve run {approved['run_id']}" in second
    assert report["approved_status"] == "completed"
    assert {made["run_id"], declined["run_id"], approved["run_id"]} <= set(report["runs"])

    # The person cancels the run elsewhere while its question is open, then dismisses it.
    stopping = report["cancelled_while_asked"]
    [cancelled] = stopping["cancel_run"]
    assert stopping["asked"] == 1 and cancelled["failure"] == "RUN_CANCELLED", stopping
    assert f"approve run {cancelled['run_id']}" in third
    answer = stopping["answer"]
    if version == "2025-11-25":  # the call that asked answers the run as it ended
        assert answer.get("run_id") == cancelled["run_id"], stopping
        assert answer["status"] == "failed" and answer["failure"] == "RUN_CANCELLED", stopping
    else:  # the retry's requestState finds the approval no longer waiting, and says why
        said = f"run {cancelled['run_id']} no longer waits on this approval (it is failed)"
        assert said in answer["error"], stopping


def check_client_2x(report: dict[str, Any]) -> None:
    """What only the 2.x line does: its manual path hands back the InputRequiredResult of
    a run nobody answers, which ``cancel_run`` then cancels; the tasks extension it does
    not send."""
    cancel = report["cancel"]
    assert cancel["answered"] == "input_required" and cancel["run_id"], cancel
    assert cancel["status"] == "failed" and cancel["failure"] == "RUN_CANCELLED", cancel
    # @modelcontextprotocol/client 2.4.0 refuses tasks/* itself on 2026-07-28 (they are
    # 2025-11-25 methods to it; it has no runtime for the tasks extension) and reads a
    # `resultType: "task"` as unsupported. When a release sends them, this fails: then
    # drive tasks/get and tasks/cancel through it (test_mcp_2026.py drives them by wire).
    tasks = report["tasks"]
    assert tasks["offered"] is False, tasks
    assert "'tasks/get' is not supported by the negotiated protocol version" in tasks["why"]
