"""Runs as MCP tasks: the extension ``io.modelcontextprotocol/tasks`` on 2026-07-28.

A client that declares the extension gets each call that starts a run (``run``,
``import_asset``, ``inspect_object``, ``render_view``) answered at once with a task
instead of a call held open until the run ends: the run is submitted (in the log before
the answer goes out) and the task's id is the run's id, so a task is exactly as durable
as its run, and its state is read from the run's events:

    queued, planning, executing   -> working
    awaiting_confirmation         -> input_required, the approval's form in inputRequests
    completed, failed             -> completed, result: the call's answer (a read's object
                                     or image; a failed run is a tool error, not a
                                     JSON-RPC one)
    failed RUN_CANCELLED          -> cancelled

``tasks/update`` answers the approval through the mesh like every door, and
``tasks/cancel`` asks the run's cancel (``services/doors/core/cancels.py``); both
acknowledge at once and the run's view shows their effect. A task is its run's owner's
alone: another user's task id answers as an unknown one.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import mcp.types as types
from mcp_types import methods as wire

from contracts.cancels import CANCELLED
from contracts.errors import BlendmeshError
from services.doors.core.cancels import NoSuchRun, RunOver, ask_cancel
from services.doors.core.ownership import NotOwned
from services.doors.core.run_view import RunView
from services.doors.mcp import answers, looks, mrtr, tools
from services.doors.mcp.approval import APPROVE_SCHEMA, prepare
from services.doors.mcp.door import Door, check
from services.doors.mcp.envelope import VERSION
from services.runtime.nats.history import read_run

EXTENSION = "io.modelcontextprotocol/tasks"
METHODS = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})
RUN_TOOLS = frozenset({"run", "import_asset", *looks.READS})  # each call starts one run
POLL_MS = 1000  # a run's steps take a second or more; polling faster learns nothing
APPROVAL_KEY = "approval-"  # + the approval's id: a key unique over the task's life


class UnknownTask(BlendmeshError):
    """No such task for this caller (unknown, or another user's: the same answer)."""

    def __init__(self, task_id: str) -> None:
        super().__init__(f"no task {task_id[:128]!r}; a task id is what tools/call answered")


def declared(capabilities: Mapping[str, Any]) -> bool:
    """Whether the request's client capabilities declare the tasks extension."""
    extensions = capabilities.get("extensions")
    return isinstance(extensions, Mapping) and isinstance(extensions.get(EXTENSION), Mapping)


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def _task(
    task_id: str, status: str, message: str, created: float, updated: float
) -> dict[str, Any]:
    return {
        "taskId": task_id,
        "status": status,
        "statusMessage": message,
        "createdAt": _iso(created),
        "lastUpdatedAt": _iso(updated),
        "ttlMs": None,  # the run stays in the log: its task does too
        "pollIntervalMs": POLL_MS,
    }


async def start(door: Door, user: str, name: str, arguments: Any) -> dict[str, Any]:
    """Submit the run a call of ``RUN_TOOLS`` asks for; its ``CreateTaskResult``."""
    if name in looks.READS:
        request = await looks.read_request(door, user, name, arguments)
    elif name == "run":
        request = await prepare(
            door, user, tools.with_request_id(check(arguments, tools.RUN.inputSchema))
        )
    else:
        request = await prepare(door, user, await looks.import_args(door, user, arguments))
    await door.client.submit(request)  # in the log: tasks/get finds it from now on
    message = f"run {request.run_id} on scene {request.scene_id} is queued"
    return {
        "resultType": "task",
        **_task(request.run_id, "working", message, request.at, request.at),
    }


async def _events(door: Door, user: str, task_id: str) -> list[Any]:
    if not isinstance(task_id, str) or len(task_id) > 128:
        raise UnknownTask(str(task_id))
    try:
        await door.own_run(task_id, user)
        return await read_run(door.bus.js, door.prefix, task_id)
    except (NotOwned, ValueError):
        raise UnknownTask(task_id) from None


async def get(door: Door, user: str, task_id: str) -> dict[str, Any]:
    """The task's state now, read from its run's events (``tasks/get``)."""
    events = await _events(door, user, task_id)
    view = RunView.of(events)
    if view is None:
        raise UnknownTask(task_id)
    created, updated = events[0].at, events[-1].at
    failure = view.failure
    if failure is not None and failure.code == CANCELLED:
        return _task(task_id, "cancelled", failure.message or failure.hint, created, updated)
    if view.status in ("completed", "failed"):
        answer = await looks.read_answer(door, user, view.result) or await _run_answer(
            door, user, view
        )
        dumped = answer.model_dump(by_alias=True, mode="json", exclude_none=True)
        # What the call would have answered had it waited: a 2026-07-28 CallToolResult.
        result = wire.serialize_server_result(
            "tools/call", VERSION, {"resultType": "complete", **dumped}
        )
        summary = f"run {task_id} {view.status}"
        return {**_task(task_id, "completed", summary, created, updated), "result": result}
    pending = view.pending
    if view.status == "awaiting_confirmation" and pending is not None:
        form = {
            "mode": "form",
            "message": answers.approval_question(pending),
            "requestedSchema": APPROVE_SCHEMA,
        }
        asked = {
            APPROVAL_KEY + pending.approval_id: {"method": "elicitation/create", "params": form}
        }
        message = f"run {task_id} waits for a person: {pending.reason}"
        return {
            **_task(task_id, "input_required", message, created, updated),
            "inputRequests": asked,
        }
    return _task(task_id, "working", f"run {task_id} is {view.status}", created, updated)


async def _run_answer(door: Door, user: str, view: RunView) -> types.CallToolResult:
    scene = await door.scene(view.scene_id, user)
    preview = await door.preview(view.scene_id, user) if scene is not None else None
    return answers.run_answer(view.result, view.pending, scene, preview)


async def update(door: Door, user: str, task_id: str, responses: Any) -> None:
    """Answer the approval the task waits on with the person's response (``tasks/update``).
    Responses to keys not outstanding (answered, superseded, never asked) are ignored, as
    the extension says; a malformed answer to the outstanding one is ``mrtr.BadAnswer``."""
    events = await _events(door, user, task_id)
    view = RunView.of(events)
    if view is None:
        raise UnknownTask(task_id)
    pending = view.pending
    if not isinstance(responses, Mapping) or pending is None:
        return
    answer = responses.get(APPROVAL_KEY + pending.approval_id)
    if answer is None:
        return
    decision = mrtr.decision_of({mrtr.INPUT_KEY: answer})
    await door.client.answer(
        task_id,
        decision,
        user,
        request_hash=pending.request_hash,
        code_sha256=pending.code_sha256,  # of the code the form showed
    )


async def cancel(door: Door, user: str, task_id: str) -> None:
    """Ask the task's run to stop, as every door does (``tasks/cancel``): the task turns
    ``cancelled`` once the run has; a run that ended already keeps its outcome."""
    await _events(door, user, task_id)
    try:
        await ask_cancel(door.client, task_id, user, "cancelled through MCP tasks/cancel")
    except RunOver:
        return
    except NoSuchRun:
        raise UnknownTask(task_id) from None


CAPABILITY_ERROR: dict[str, Any] = {
    "requiredCapabilities": {"extensions": {EXTENSION: {}}}
}  # the data of -32021 for a tasks/* request from a client that did not declare them
