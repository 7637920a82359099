"""The MCP server of 2025-11-25: sixteen tools, three resources and two prompts over one
``Door``, on stdio or HTTP (``modern.py`` serves the same to 2026-07-28 clients).

Built on the SDK's low-level ``Server`` (as ``blendmesh mcp guardians`` is) so that every
answer, including a bad argument or a failed run, is a ``CallToolResult`` this module
shapes: a spec 002 error type and a safe message, never a crash. A resource that cannot
be read is a JSON-RPC error with the MCP spec's code (``read_safely``). Who the caller is
comes from ``user_of``: the local user on stdio, the bearer token's user over HTTP.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from importlib.metadata import version
from typing import Any, TypeVar

import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.shared.context import RequestContext
from mcp.shared.exceptions import McpError
from nats.errors import Error as NatsError
from pydantic import AnyUrl

from contracts.cancels import CANCELLED
from contracts.change_text import summary
from contracts.changes import to_data
from contracts.session import MCP_STDIO, HostProfile
from services.doors.core.cancels import cancel_run
from services.doors.core.client import ClientError, MeshClient
from services.doors.core.ownership import NotOwned
from services.doors.core.quota import QuotaExceeded, RunQuota
from services.doors.core.reviews import NoRevision, Revisions, registry_approvers
from services.doors.core.scene_client import NoScene
from services.doors.mcp import (
    answers,
    cards,
    exports,
    finding,
    looks,
    prompts,
    render_tools,
    steer,
    tools,
)
from services.doors.mcp.approval import submit
from services.doors.mcp.door import Door, check, plain
from services.doors.mcp.errors import AuthError, NotFound, ToolError, Unavailable, ValidationError
from services.runtime.nats.quorum import JetStreamUnavailable
from services.runtime.service.host import Bus
from services.runtime.service.settings import Settings

SERVER_NAME = "blendmesh"
SERVER_VERSION = version("blendmesh")  # a host's serverInfo.version: blendmesh's, not the SDK's
RESOURCE_NOT_FOUND = -32002  # the MCP spec's code for a resource that is not there
INSTRUCTIONS = (
    "blendmesh changes Blender scenes safely. Plan with the `run` tool (a request in words, "
    "or a plan naming tools that `list_category` and `search_tools` find); blendmesh "
    "checks, decides and "
    "applies it. Look before you change: `inspect_object` and `render_view` read a scene; "
    "`import_asset` brings a glTF, FBX, OBJ, USD or STL file into it. Destructive "
    "operations need a person's approval, which the host asks "
    "for; you cannot approve them. A failed run's failure contract says how to repair it."
)
log = logging.getLogger("blendmesh.mcp")

Context = RequestContext[Any, Any, Any]
UserOf = Callable[[Context], str]
# The tools a model may call; the runs they start show in the approval card where the
# host renders MCP Apps.
LISTED = [
    cards.carded(t)
    for t in [
        *tools.TOOLS,
        *steer.TOOLS,
        *looks.TOOLS,
        *exports.TOOLS,
        *finding.TOOLS,
        *render_tools.TOOLS,
    ]
]


USER_KEY = "blendmesh.user"
T = TypeVar("T")


def local_user(user: str) -> UserOf:
    """Every request is ``user``'s: the stdio server acts as the person who started it."""
    return lambda _ctx: user


def authenticated_user(ctx: Context) -> str:
    """The user an HTTP door authenticated and put in the request's scope; no user, no
    answer (never a default user)."""
    request = ctx.request
    user = request.scope.get(USER_KEY) if request is not None else None
    if not isinstance(user, str) or not user:
        raise AuthError("this request carries no authenticated user")
    return user


async def _call(door: Door, user: str, name: str, args: Any, ctx: Context) -> types.CallToolResult:
    match name:
        case "run":
            checked = tools.with_request_id(check(args, tools.RUN.inputSchema))
            return await submit(door, user, checked, ctx)
        case "runs":
            limit = check(args, tools.RUNS.inputSchema).get("limit", 20)
            rows = await door.runs(user, limit)
            return answers.result(f"{len(rows)} runs, newest first", {"runs": rows})
        case "run_status":
            run_id = check(args, tools.RUN_STATUS.inputSchema)["run_id"]
            view = await door.status(run_id, user)
            scene = await door.scene(view.scene_id, user)
            return answers.run_answer(view.result, view.pending, scene, None)
        case "answer_approval":  # the approval card's, with the seal only it was given
            return await cards.answer_approval(door, user, args)
        case "cancel_run":
            checked = check(args, tools.CANCEL_RUN.inputSchema)
            await door.own_run(checked["run_id"], user)  # another's run: as an unknown one
            view = await cancel_run(
                door.client, checked["run_id"], user, checked.get("reason", ""),
                timeout=door.run_timeout,
            )  # fmt: skip
            scene = await door.scene(view.scene_id, user)
            ended = answers.run_answer(view.result, view.pending, scene, None)
            done = view.result.failure is not None and view.result.failure.error_code == CANCELLED
            # The run failed as asked: for this call that is success, not an error.
            return ended.model_copy(update={"isError": False}) if done else ended
        case "audit":
            checked = check(args, tools.AUDIT.inputSchema)
            run_id = checked["run_id"]
            trail = await door.audit(run_id, user, checked.get("offset", 0))
            n = len(trail["audit_records"])
            more = trail["next_offset"]
            rest = f"; more from offset {more} of {trail['rows']} rows" if more is not None else ""
            return answers.result(f"run {run_id}: {n} audit records{rest}", trail)
        case "scene":
            scene_id = check(args, tools.SCENE.inputSchema)["scene_id"]
            scene = await door.scene(scene_id, user)
            if scene is None:
                raise NotFound(f"no scene {scene_id}")
            return answers.result(f"scene {scene_id} at revision {scene['revision']}", scene)
        case "scenes":
            limit = check(args, tools.SCENES.inputSchema).get("limit", 50)
            scenes = await door.scenes(user, limit)
            return answers.result(f"{len(scenes)} scenes", {"scenes": scenes})
        case "scene_history":
            scene_id = check(args, tools.SCENE_HISTORY.inputSchema)["scene_id"]
            history = await door.scene_history(scene_id, user)
            if history is None:
                raise NotFound(f"no scene {scene_id}")
            n = len(history)
            return answers.result(f"scene {scene_id}: {n} revisions", {"revisions": history})
        case "scene_changes":
            checked = check(args, tools.SCENE_CHANGES.inputSchema)
            revisions = Revisions.of(door.bus, registry_approvers(door.settings))
            listed = await revisions.changes(
                checked["scene_id"], user, checked.get("base"), checked.get("revision")
            )
            return answers.result(summary(listed), to_data(listed))
        case "preview":
            scene_id = check(args, tools.PREVIEW.inputSchema)["scene_id"]
            png = await door.preview(scene_id, user)
            if png is None:
                raise NotFound(f"no preview of scene {scene_id}")
            return answers.result(f"preview of scene {scene_id}", {"scene_id": scene_id}, [png])
    if name in looks.NAMES:
        return await looks.call(door, user, name, args, ctx)
    if name in steer.NAMES:
        return await steer.call(door, user, name, args, ctx)
    if name in exports.NAMES:
        return await exports.call(door, user, name, args, ctx)
    if name in finding.NAMES:
        return await finding.call(door, name, args)
    if name in render_tools.NAMES:
        return await render_tools.call(door, user, name, args)
    names = ", ".join(t.name for t in LISTED)
    raise ValidationError(f"unknown tool; this server has: {names}")


async def call_safely(
    door: Door, user_of: UserOf, name: str, args: Any, ctx: Context
) -> types.CallToolResult:
    """Every outcome as a tool result; mesh trouble and surprises get safe messages."""
    return await guarded(name, lambda: _call(door, user_of(ctx), name, args, ctx))


async def guarded(name: str, work: Callable[[], Awaitable[T]]) -> T | types.CallToolResult:
    """``work``'s answer, or its failure as a tool error with a safe message."""
    try:
        return await work()
    except ToolError as exc:
        return answers.tool_error(exc)
    except (NotOwned, NoScene, NoRevision) as exc:  # unknown and another's look the same
        return answers.tool_error(NotFound(str(exc)))
    except (QuotaExceeded, JetStreamUnavailable) as exc:  # their words name the limit
        return answers.tool_error(Unavailable(str(exc)))
    except (NatsError, TimeoutError, ConnectionError):
        log.warning("tool %s: the mesh did not answer", name)
        return answers.tool_error(Unavailable("the mesh did not answer; retry when it is up"))
    except ClientError as exc:  # e.g. a resolution racing another door's
        return answers.tool_error(ToolError(str(exc)))
    except Exception as exc:  # the server outlives any one call
        log.error("tool %s failed: %s", name, type(exc).__name__, exc_info=True)
        return answers.tool_error(ToolError("the MCP server failed; see its log"))


async def read(door: Door, user: str, uri: str) -> bytes:
    if uri == tools.CATALOG_URI:
        return await door.catalog()
    if uri == tools.NODES_URI:
        return await door.nodes()
    if uri.startswith(tools.SCENE_URI_PREFIX):
        scene_id = uri.removeprefix(tools.SCENE_URI_PREFIX)
        check({"scene_id": scene_id}, tools.SCENE.inputSchema)
        return await door.inspection(scene_id, user)
    raise NotFound("no such resource")


def resource_error(uri: str, exc: ToolError) -> types.ErrorData:
    """A refused read as the JSON-RPC error the MCP spec names: an unknown resource and
    another user's are the same -32002, so ids cannot be probed; a malformed id -32602."""
    if isinstance(exc, NotFound):
        return types.ErrorData(
            code=RESOURCE_NOT_FOUND, message="Resource not found", data={"uri": uri}
        )
    if isinstance(exc, ValidationError):
        return types.ErrorData(code=types.INVALID_PARAMS, message=str(exc), data={"uri": uri})
    return types.ErrorData(code=types.INTERNAL_ERROR, message=f"{exc.type_name}: {exc}")


async def read_safely(door: Door, user_of: UserOf, uri: str, ctx: Context) -> bytes:
    """The resource's bytes; ``McpError`` with a spec code and a safe message otherwise."""
    try:
        return await read(door, user_of(ctx), uri)
    except ToolError as exc:
        error = resource_error(uri, exc)
    except NotOwned as exc:
        error = resource_error(uri, NotFound(str(exc)))
    except (NatsError, TimeoutError, ConnectionError):
        log.warning("a resource read: the mesh did not answer")
        error = resource_error(uri, Unavailable("the mesh did not answer; retry when it is up"))
    except Exception as exc:  # the server outlives any one read
        log.error("a resource read failed: %s", type(exc).__name__, exc_info=True)
        error = resource_error(uri, ToolError("the MCP server failed; see its log"))
    raise McpError(error)


def build_server(door: Door, user_of: UserOf) -> Server[Any, Any]:
    server: Server[Any, Any] = Server(
        SERVER_NAME, version=SERVER_VERSION, instructions=INSTRUCTIONS
    )

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        if cards.session_renders_apps(server.request_context.session):
            return [*LISTED, cards.ANSWER_APPROVAL]
        return LISTED

    @server.list_prompts()
    async def list_prompts() -> list[types.Prompt]:
        return prompts.PROMPTS

    @server.get_prompt()
    async def get_prompt(name: str, arguments: dict[str, str] | None) -> types.GetPromptResult:
        try:
            return prompts.get(name, arguments)
        except ValidationError as exc:
            raise McpError(types.ErrorData(code=types.INVALID_PARAMS, message=str(exc))) from None

    @server.call_tool(validate_input=False)
    async def call_tool(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        return await call_safely(door, user_of, name, arguments, server.request_context)

    @server.list_resources()
    async def list_resources() -> list[types.Resource]:
        return [*tools.RESOURCES, cards.CARD]

    @server.list_resource_templates()
    async def list_templates() -> list[types.ResourceTemplate]:
        return tools.TEMPLATES

    @server.read_resource()
    async def read_resource(uri: AnyUrl) -> Iterable[ReadResourceContents]:
        if str(uri) == cards.CARD_URI:  # the same page for everyone: it holds no data
            return [ReadResourceContents(content=cards.card_html(), mime_type=cards.APP_MIME)]
        data = await read_safely(door, user_of, str(uri), server.request_context)
        return [ReadResourceContents(content=data.decode(), mime_type="application/json")]

    return server


def door_for(
    settings: Settings, bus: Bus, run_timeout: float = 600.0, host: HostProfile = MCP_STDIO
) -> Door:
    """The door of one MCP transport; ``host`` is the profile its requests declare."""
    return Door(
        settings=settings,
        bus=bus,
        client=MeshClient(bus, quota=RunQuota.from_env(settings.env)),
        run_timeout=run_timeout,
        host=host,
    )


__all__ = [
    "USER_KEY",
    "authenticated_user",
    "build_server",
    "call_safely",
    "door_for",
    "guarded",
    "local_user",
    "plain",
    "read_safely",
]
