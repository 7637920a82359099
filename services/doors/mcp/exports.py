"""The MCP tool ``export_scene``: a scene as a GLB, FBX, OBJ, USD or STL file.

A run of one ``scene.export`` operation built by ``services/doors/core/scene_looks.py``,
as the CLI and the HTTP route build it: policy decides it, the audit records it. The file
comes back in the answer as an embedded resource (base64), up to ``MCP_FILE_BYTES``; a
larger one is answered by size and the ways to download it, so a host's context never
takes more than a model can use.
"""

from __future__ import annotations

import base64
from typing import Any

import mcp.types as types
from mcp.shared.context import RequestContext
from pydantic import AnyUrl

from contracts.exports import FORMATS, file_name
from contracts.tool_answers import output_schema
from services.doors.core.run_view import RunView
from services.doors.core.scene_client import NoScene, SceneDoor
from services.doors.core.scene_looks import BadExport, SceneLooks, operation_result
from services.doors.mcp import answers
from services.doors.mcp.approval import progress
from services.doors.mcp.door import Door, check
from services.doors.mcp.errors import NotFound, Timeout, ValidationError
from services.doors.mcp.tools import SCENE_ID, _schema

Context = RequestContext[Any, Any, Any]
MCP_FILE_BYTES = 8 * 1024 * 1024  # a file larger than this is downloaded, not answered

EXPORT_SCENE = types.Tool(
    name="export_scene",
    title="Export a scene as a file",
    description=(
        "Your scene as a file: glb (binary glTF), fbx, obj, usd (binary USD) or stl, meshes "
        "with their modifiers applied. The file is the answer's embedded resource "
        f"(base64) up to {MCP_FILE_BYTES // (1024 * 1024)} MiB; a larger one is answered by "
        "size, to download with `blendmesh scenes export` or GET "
        "/api/scenes/{scene_id}/export/{format}. A read: it runs as a checked, audited "
        "operation and makes no revision."
    ),
    inputSchema=_schema(
        {
            "scene_id": SCENE_ID,
            "format": {
                "type": "string",
                "enum": sorted(FORMATS),
                "description": "the file format, e.g. `glb`",
            },
        },
        ["scene_id", "format"],
    ),
    outputSchema=output_schema("export_scene"),
    annotations=types.ToolAnnotations(
        readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
    ),
)
TOOLS = [EXPORT_SCENE]
NAMES = frozenset(t.name for t in TOOLS)


async def call(door: Door, user: str, name: str, args: Any, ctx: Context) -> types.CallToolResult:
    """Export the scene; bad input and another user's scene as tool errors."""
    checked = check(args, EXPORT_SCENE.inputSchema)
    scene_id, fmt = checked["scene_id"], checked["format"]
    looks = SceneLooks(SceneDoor(door.bus, door.settings))
    try:
        request = await looks.export_request(user, scene_id, fmt)
    except NoScene as exc:
        raise NotFound(str(exc)) from None
    except BadExport as exc:
        raise ValidationError(str(exc)) from None
    try:
        async with progress(ctx) as on_event:
            result = await door.client.run(request, on_event, door.run_timeout)
    except Exception as exc:
        raise Timeout(
            f"run {request.run_id} has no answer within {door.run_timeout:g} s; it goes on "
            "in the mesh: ask `run_status` later"
        ) from exc
    answered = operation_result(result)
    if result.status != "completed" or answered is None:
        pending = RunView.of_result(result).pending
        return answers.run_answer(result, pending, await door.scene(scene_id, user), None)
    data = {"run_id": result.run_id, "scene_id": scene_id, **answered}
    name = file_name(scene_id, fmt)
    if answered["bytes"] > MCP_FILE_BYTES:
        said = (
            f"{name}: {answered['bytes']} bytes, more than an answer carries; download it with "
            f"`blendmesh scenes export {scene_id} --format {fmt} -o {name}`"
        )
        return answers.result(said, data)
    blob = await looks.download(user, result)
    if blob is None:
        raise NotFound("the exported file has expired from the store; export it again")
    content = answers.result(f"{name} ({len(blob)} bytes)", data)
    resource = types.BlobResourceContents(
        uri=AnyUrl(f"blendmesh://scenes/{scene_id}/export/{fmt}"),
        mimeType=FORMATS[fmt][1],
        blob=base64.b64encode(blob).decode(),
    )
    content.content.append(types.EmbeddedResource(type="resource", resource=resource))
    return content
