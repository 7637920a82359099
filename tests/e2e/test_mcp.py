"""``blendmesh mcp`` as an MCP host starts it: over stdio, with the official SDK's client,
acting as the local user: on the embedded mesh the command starts, or on a running mesh it
joins (NATS_URL), the ``blendmesh up`` the e2e tests share, as a user of the test's own."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.context import RequestContext

from services.runtime.nats.retry import poll
from tests.support.checked_session import CheckedSession
from tests.support.joined_mesh import Joined
from tests.support.mcp_plans import create, delete, error_type, op, plan, structured
from tests.support.meshes import BLENDMESH, command_env

Answers = list[types.ElicitResult]
CALL_WAIT = 150  # seconds a call may take before the test names it; under the test's timeout
PICTURE_WAIT = 60  # seconds the first picture may take on a busy machine


@asynccontextmanager
async def door(
    home: Path,
    answers: Answers | None = None,
    joined: Joined | None = None,
    previews: bool = False,
) -> AsyncIterator[ClientSession]:
    """``blendmesh mcp`` in ``home`` (the test's own directory): on an embedded mesh there,
    or on the shared mesh as ``joined``'s user. A host that asks its person when ``answers``
    is given (each elicitation takes the next answer), one that cannot ask otherwise.
    ``previews``: the embedded mesh renders pictures of its scenes."""
    mesh_home = home if joined is None else joined.home
    env = {"BLENDMESH_USER": "ana"} if joined is None else joined.env()
    if previews:
        env["BLENDMESH_PREVIEWS"] = "1"
    params = StdioServerParameters(
        command=BLENDMESH,
        args=["--home", str(mesh_home), "-v", "mcp"],
        env=command_env(env),
        cwd=str(home),
    )
    asked: list[str] = []

    async def elicit(_ctx: RequestContext[Any, Any], params: types.ElicitRequestParams) -> Any:
        # An extra question is declined, as a person would, and shows in ``asked``, which
        # the tests count; the door then answers the call rather than an error of the SDK.
        asked.append(params.message)
        return answers.pop(0) if answers else types.ElicitResult(action="decline")

    # The door's own log, shown when a call fails: a call that gets no answer says which
    # one it was (the read timeout) and what the mesh was doing meanwhile.
    stderr = home / "mcp-door.log"  # home is the test's own tmp_path: it exists
    answered = False
    with stderr.open("w") as errlog:
        try:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                CheckedSession(
                    read,
                    write,
                    read_timeout_seconds=timedelta(seconds=CALL_WAIT),
                    elicitation_callback=elicit if answers is not None else None,
                ) as session,
            ):
                await session.initialize()
                session.asked = asked  # type: ignore[attr-defined]
                yield session
                answered = True
        except BaseException as exc:
            if answered and reader_broke_on_close(exc):
                return

            tail = stderr.read_text(errors="replace")[-4000:]
            exc.add_note(f"blendmesh mcp wrote, last 4000 characters:\n{tail}")
            if joined is not None:  # and what the mesh it joined was doing meanwhile
                said = joined.mesh.log.read_text(errors="replace")[-8000:]
                exc.add_note(f"the shared blendmesh up wrote, last 8000 characters:\n{said}")
            raise


def reader_broke_on_close(exc: BaseException) -> bool:
    """Whether ``exc`` is only the 1.x SDK's stdio client breaking its own reader as it
    closes, when the door wrote a line at that moment (modelcontextprotocol/python-sdk
    #1960, fixed on its main branch, not in 1.x): every call had its answer by then."""
    if not isinstance(exc, BaseExceptionGroup):
        return False
    _, rest = exc.split(anyio.BrokenResourceError)
    return rest is None


async def test_mcp_when_listed_and_run_answers_tools_resources_and_preview(
    tmp_path: Path,
) -> None:
    # On the embedded mesh the command starts, as a host starts it with nothing running.
    lines: list[str] = []

    async def on_progress(_progress: float, _total: float | None, message: str | None) -> None:
        lines.append(message or "")

    async with door(tmp_path, previews=True) as session:
        listed = await session.list_tools()
        resources = await session.list_resources()
        templates = await session.list_resource_templates()
        # The previews' Blender starts with the first picture, at the lowest CPU priority:
        # on a busy machine that takes longer than a run's answer waits for its picture
        # (5 s). Once it runs, a one-cube picture comes within that.
        await session.call_tool("run", {"plan": create("Warm"), "scene_id": "demo"})
        await poll(
            lambda: session.call_tool("preview", {"scene_id": "demo"}),
            lambda shown: [c.type for c in shown.content] == ["text", "image"],
            PICTURE_WAIT,
            pause=0.5,
        )
        ran = await session.call_tool(
            "run",
            {"plan": create("Box"), "scene_id": "demo"},
            progress_callback=on_progress,
        )
        catalog = await session.read_resource("blendmesh://catalog")  # type: ignore[arg-type]
        inspection = await session.read_resource(
            "blendmesh://scenes/demo"  # type: ignore[arg-type]
        )
        status = await session.call_tool("run_status", {"run_id": structured(ran)["run_id"]})
        runs = await session.call_tool("runs", {})
        scene = await session.call_tool("scene", {"scene_id": "demo"})
        scenes = await session.call_tool("scenes", {})
        history = await session.call_tool("scene_history", {"scene_id": "demo"})
        unknown_history = await session.call_tool("scene_history", {"scene_id": "never"})
        preview = await session.call_tool("preview", {"scene_id": "demo"})
    assert {t.name for t in listed.tools} == {
        "run",
        "runs",
        "run_status",
        "cancel_run",
        "rerun_run",
        "fork_run",
        "audit",
        "scene",
        "scenes",
        "scene_history",
        "scene_changes",
        "preview",
        "inspect_object",
        "render_view",
        "import_asset",
        "list_category",
        "search_tools",
        "export_scene",
        "render",
        "render_job",
        "cancel_render",
        "render_frame",
    }
    assert all(t.description and t.inputSchema["type"] == "object" for t in listed.tools)
    assert {str(r.uri) for r in resources.resources} == {
        "blendmesh://catalog",
        "blendmesh://nodes",
        "ui://blendmesh/approval-card.html",  # drawn only by hosts that render MCP Apps
    }
    assert "answer_approval" not in {t.name for t in listed.tools}  # no Apps declared
    assert templates.resourceTemplates[0].uriTemplate == "blendmesh://scenes/{scene_id}"
    assert ran.isError is False, ran.content
    result = structured(ran)
    assert result["status"] == "completed" and result["ok"] is True
    assert result["receipts"][0]["tool_name"] == "object.create"
    assert "Box" in {o["name"] for o in result["scene"]["objects"]}
    assert "blend_path" not in result
    assert [c.type for c in ran.content] == ["text", "image"]
    image = ran.content[1]
    assert isinstance(image, types.ImageContent) and image.mimeType == "image/png"
    assert any("object.create" in line for line in lines), lines
    tools = json.loads(catalog.contents[0].text)  # type: ignore[union-attr]
    assert "object.delete" in json.dumps(tools)
    assert inspection.contents[0].text  # type: ignore[union-attr]
    assert structured(status)["status"] == "completed"
    assert result["run_id"] in {r["run_id"] for r in structured(runs)["runs"]}
    assert structured(scene)["revision"] >= 1
    assert [s["scene_id"] for s in structured(scenes)["scenes"]] == ["demo"]
    assert [r["revision"] for r in structured(history)["revisions"]] == [1, 2]
    assert error_type(unknown_history) == "NotFound"
    assert [c.type for c in preview.content] == ["text", "image"]


@pytest.mark.clause("001-§validate-input.3")
async def test_mcp_when_arguments_bad_answers_tool_errors_and_keeps_serving(
    tmp_path: Path, joined: Joined
) -> None:
    s, nowhere = joined.scene("s"), joined.scene("nowhere")
    async with door(tmp_path, joined=joined) as session:
        not_a_plan = await session.call_tool("run", {"plan": "delete everything", "scene_id": s})
        both = await session.call_tool(
            "run", {"request": "add a cube", "plan": create("A"), "scene_id": s}
        )
        unknown_arg = await session.call_tool("run", {"scene_id": s, "sudo": True})
        bad_scene = await session.call_tool("run", {"request": "add a cube", "scene_id": "../x"})
        schema_invalid = await session.call_tool(
            "run", {"plan": {"operations": "nope"}, "scene_id": s}
        )
        no_scene = await session.call_tool("scene", {"scene_id": nowhere})
        no_preview = await session.call_tool("preview", {"scene_id": nowhere})
        no_run = await session.call_tool("run_status", {"run_id": "run-none"})
        no_tool = await session.call_tool("approve", {"run_id": "run-none"})
        works = await session.call_tool("run", {"request": "add a cone named Tip", "scene_id": s})
    for answer in (not_a_plan, both, unknown_arg, bad_scene, no_tool):
        assert error_type(answer) == "ValidationError"
    assert "delete everything" not in not_a_plan.content[0].text  # type: ignore[union-attr]
    assert error_type(schema_invalid) == "ValidationError"
    assert structured(schema_invalid)["failure"]["error_code"] == "SCHEMA_INVALID"
    for answer in (no_scene, no_preview, no_run):
        assert error_type(answer) == "NotFound"
    assert structured(works)["status"] == "completed", works.content


async def test_mcp_destructive_plan_when_person_answers_in_host_completes_or_fails(
    tmp_path: Path, joined: Joined
) -> None:
    accept = types.ElicitResult(action="accept", content={"approve": True})
    decline = types.ElicitResult(action="decline")
    s = joined.scene("s")
    async with door(tmp_path, [accept, decline], joined) as session:
        await session.call_tool("run", {"plan": create("Old"), "scene_id": s})
        approved = await session.call_tool("run", {"plan": delete("Old"), "scene_id": s})
        await session.call_tool("run", {"plan": create("Keep"), "scene_id": s})
        rejected = await session.call_tool("run", {"plan": delete("Keep"), "scene_id": s})
        trail = await session.call_tool("audit", {"run_id": structured(rejected)["run_id"]})
        asked: list[str] = session.asked  # type: ignore[attr-defined]
    assert structured(approved)["status"] == "completed", approved.content
    assert structured(approved)["receipts"][0]["tool_name"] == "object.delete"
    assert error_type(rejected) == "PolicyError"
    assert structured(rejected)["failure"]["error_code"] == "APPROVAL_REJECTED"
    assert len(asked) == 2 and "object.delete" in asked[0] and '"name":"Old"' in asked[0]
    timeline = json.dumps(structured(trail)["timeline"])
    assert "approval_resolved" in timeline


async def test_mcp_destructive_plan_when_host_cannot_ask_waits_for_cli_approval(
    tmp_path: Path, joined: Joined
) -> None:
    s = joined.scene("s")
    async with door(tmp_path, joined=joined) as session:
        await session.call_tool("run", {"plan": create("Old"), "scene_id": s})
        waiting = await session.call_tool("run", {"plan": delete("Old"), "scene_id": s})
        result = structured(waiting)
        run_id = result["run_id"]
        # As a person at another terminal: the mesh's address from its home.
        info = json.loads((joined.home / "mesh.json").read_text())
        env = {
            "BLENDMESH_USER": joined.user,
            "NATS_URL": info["url"],
            "BLENDMESH_NATS_CREDENTIALS": str(joined.home / "nats-credentials.json"),
        }
        approve = await asyncio.create_subprocess_exec(
            *[BLENDMESH, "--home", str(tmp_path / "cli"), "approve", "--json", run_id],
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            stdin=asyncio.subprocess.DEVNULL,
            env=command_env(env),
        )
        _, stderr = await asyncio.wait_for(approve.communicate(), 120)
        status = await session.call_tool("run_status", {"run_id": run_id})
    assert waiting.isError is False
    assert result["status"] == "awaiting_confirmation"
    assert result["approval"]["approval_id"]
    assert result["approval"]["approve_command"] == f"blendmesh approve {run_id}"
    assert result["approval"]["operations"][0]["tool"] == "object.delete"
    text = waiting.content[0].text  # type: ignore[union-attr]
    assert f"blendmesh approve {run_id}" in text
    assert approve.returncode == 0, stderr.decode()
    assert structured(status)["status"] == "completed"


async def test_mcp_cancel_run_when_a_run_waits_ends_it_and_a_second_cancel_says_why_not(
    tmp_path: Path, joined: Joined
) -> None:
    s = joined.scene("s")
    async with door(tmp_path, joined=joined) as session:
        await session.call_tool("run", {"plan": create("Stay"), "scene_id": s})
        waiting = structured(
            await session.call_tool("run", {"plan": delete("Stay"), "scene_id": s})
        )
        run_id = waiting["run_id"]
        cancelled = await session.call_tool("cancel_run", {"run_id": run_id, "reason": "no"})
        again = await session.call_tool("cancel_run", {"run_id": run_id})
        unknown = await session.call_tool("cancel_run", {"run_id": "run-none"})
        scene = structured(await session.call_tool("scene", {"scene_id": s}))
    assert waiting["status"] == "awaiting_confirmation"
    assert cancelled.isError is False, cancelled.content
    result = structured(cancelled)
    assert result["status"] == "failed" and result["failure"]["error_code"] == "RUN_CANCELLED"
    assert again.isError is True
    assert "failed already (cancelled by" in again.content[0].text  # type: ignore[union-attr]
    assert unknown.isError is True and error_type(unknown) == "NotFound"
    assert "Stay" in [o["name"] for o in scene["objects"]]


async def test_mcp_when_host_cancels_the_wait_the_run_goes_on(
    tmp_path: Path, joined: Joined
) -> None:
    """Cancelling a ``run`` call ends the host's wait, never the run in the mesh."""
    submitted = asyncio.Event()
    run_id: list[str] = []

    async def on_progress(_progress: float, _total: float | None, message: str | None) -> None:
        if message and message.startswith("run ") and not run_id:
            run_id.append(message.split()[1])
            submitted.set()

    many = plan(*(op(f"c{i:02d}", "object.create", {"primitive": "cube", "name": f"C{i}"})
                  for i in range(40)))  # fmt: skip
    async with door(tmp_path, joined=joined) as session:
        call = asyncio.create_task(
            session.call_tool(
                "run",
                {"plan": many, "scene_id": joined.scene("busy")},
                progress_callback=on_progress,
            )
        )
        await asyncio.wait_for(submitted.wait(), timeout=60)
        call.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await call
        assert call.cancelled()  # the host stopped waiting while the run was under way
        status = "queued"
        for _ in range(600):  # the run finishes in the mesh all the same
            answer = await session.call_tool("run_status", {"run_id": run_id[0]})
            status = structured(answer)["status"]
            if status in ("completed", "failed"):
                break
            await asyncio.sleep(0.1)
    assert status == "completed"
