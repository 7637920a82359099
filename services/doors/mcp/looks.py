"""The MCP tools for one object in depth, a view as an image, and an asset import.

Each submits a one-operation run (``services/doors/core/scene_looks.py``), so the host's model gets
nothing the policy did not decide and the audit does not record. Reads answer the
operation's result; a view answers an MCP image; an import answers like ``run`` (it may
wait for a person's approval, asked through the host).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
from collections.abc import Iterator
from typing import Any

import mcp.types as types
from mcp.shared.context import RequestContext

from contracts.assets import COLLECTION_PATTERN, EXTENSIONS
from contracts.events import RunRequested
from contracts.receipts import RunResult
from contracts.scene_files import DEFAULT_MAX_UPLOAD_BYTES
from contracts.tool_answers import output_schema
from contracts.views import (
    DEFAULT_AZIMUTH,
    DEFAULT_ELEVATION,
    DEFAULT_SHADING,
    INSPECT_TOOL,
    MAX_RENDERED_SIDE,
    MAX_SIDE,
    MIN_SIDE,
    SHADINGS,
    VIEW_TOOL,
)
from services.doors.core.client import ClientError
from services.doors.core.run_view import RunView
from services.doors.core.scene_client import NoScene, SceneDoor, UploadTooLarge
from services.doors.core.scene_looks import (
    AssetRefused,
    BadView,
    NoUpload,
    SceneLooks,
    operation_result,
)
from services.doors.mcp import answers
from services.doors.mcp.approval import progress, submit
from services.doors.mcp.door import Door, check
from services.doors.mcp.errors import NotFound, Timeout, ValidationError
from services.doors.mcp.tools import SCENE_ID, _schema

Context = RequestContext[Any, Any, Any]
_READ = types.ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)
_SIDE = {"type": "integer", "minimum": MIN_SIDE, "maximum": MAX_SIDE, "default": 512}

INSPECT_OBJECT = types.Tool(
    name="inspect_object",
    title="One object in depth",
    description=(
        "One object of your scene in depth: mesh counts (vertices, edges, faces, "
        "triangles) before and after modifiers, each modifier's type, name and settings, "
        "material slots, custom properties, world-space bounds, transform (rotation in "
        "radians), parent, children and collections. A read: it runs as a checked, audited "
        "operation and makes no revision. `scene` lists the object names."
    ),
    inputSchema=_schema(
        {
            "scene_id": SCENE_ID,
            "name": {
                "type": "string",
                "minLength": 1,
                "maxLength": 63,
                "description": "the object's exact name, e.g. `Box`",
            },
        },
        ["scene_id", "name"],
    ),
    outputSchema=output_schema("inspect_object"),
    annotations=_READ,
)
RENDER_VIEW = types.Tool(
    name="render_view",
    title="Render a view",
    description=(
        "A PNG image of your scene's head revision from a chosen angle or through one of "
        f"its cameras, {MIN_SIDE} to {MAX_SIDE} pixels a side. Give `camera` (a camera "
        "object's name) or `azimuth`/`elevation` in degrees (azimuth 0 looks from -Y, 90 "
        f"from +X; elevation 90 from above; default {DEFAULT_AZIMUTH:g}/"
        f"{DEFAULT_ELEVATION:g}), not both; the view frames the whole scene. A read: "
        "checked and audited, no revision."
    ),
    inputSchema=_schema(
        {
            "scene_id": SCENE_ID,
            "width": _SIDE,
            "height": _SIDE,
            "azimuth": {"type": "number", "minimum": -360, "maximum": 360},
            "elevation": {"type": "number", "minimum": -90, "maximum": 90},
            "camera": {"type": "string", "minLength": 1, "maxLength": 63},
            "shading": {
                "type": "string",
                "enum": list(SHADINGS),
                "default": DEFAULT_SHADING,
                "description": "material: colours and image textures (fast); solid: flat "
                f"viewport colours; rendered: Cycles, a few seconds, at most "
                f"{MAX_RENDERED_SIDE} pixels a side",
            },
        },
        ["scene_id"],
    ),
    outputSchema=output_schema("render_view"),
    annotations=_READ,
)
IMPORT_ASSET = types.Tool(
    name="import_asset",
    title="Import an asset file",
    description=(
        "Add the objects of an asset file to a collection of a scene (made when missing; a "
        "new scene id starts a new scene). The file's name says its format: "
        f"{', '.join(EXTENSIONS)} (USD as text). Give exactly one of `data` (its bytes "
        "base64-encoded) or `upload` (the blob a staged upload answered). Limits: over stdio "
        "(blendmesh mcp) `data` is at most BLENDMESH_MAX_UPLOAD_BYTES (64 MiB by default); "
        "over HTTP (/mcp) the whole request is at most BLENDMESH_MAX_BODY_BYTES (1 MiB by "
        "default, about 750 KB of file), so a larger file is first POSTed, as raw bytes "
        "with the same bearer token, to the gateway's /api/uploads (up to "
        "BLENDMESH_MAX_UPLOAD_BYTES; kept a day), and `upload` names the `blob` it "
        "answers. Files that refer to other files (a "
        "glTF buffer or image by URI, an OBJ material library, a USD asset path, an FBX "
        "texture by path) are refused. A write: policy decides it, it may wait for a "
        "person's approval, and it makes a new revision. Answers like `run`."
    ),
    inputSchema=_schema(
        {
            "scene_id": SCENE_ID,
            "filename": {
                "type": "string",
                "minLength": 1,
                "maxLength": 255,
                "description": "the file's name with its ending, e.g. `chair.glb`",
            },
            "data": {
                "type": "string",
                "minLength": 1,
                "maxLength": (DEFAULT_MAX_UPLOAD_BYTES + 2) // 3 * 4,
                "contentEncoding": "base64",
                "description": "the file's bytes, base64-encoded",
            },
            "upload": {
                "type": "string",
                "pattern": r"^sha256:[0-9a-f]{64}$",
                "description": "the `blob` POST /api/uploads answered for this file",
            },
            "collection": {
                "type": "string",
                "pattern": COLLECTION_PATTERN,
                "description": "the collection the objects go into, e.g. `Props`",
            },
        },
        ["scene_id", "filename", "collection"],
    ),
    outputSchema=output_schema("import_asset"),
    annotations=types.ToolAnnotations(
        readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False
    ),
)
TOOLS = [INSPECT_OBJECT, RENDER_VIEW, IMPORT_ASSET]
NAMES = frozenset(t.name for t in TOOLS)
READS = frozenset({"inspect_object", "render_view"})  # one read-only operation each


def _looks(door: Door) -> SceneLooks:
    return SceneLooks(SceneDoor(door.bus, door.settings))


async def _run(door: Door, ctx: Context, request: Any) -> RunResult:
    try:
        async with progress(ctx) as on_event:
            return await door.client.run(request, on_event, door.run_timeout)
    except ClientError as exc:
        raise Timeout(
            f"run {request.run_id} has no answer within {door.run_timeout:g} s; it goes on "
            "in the mesh: ask `run_status` later"
        ) from exc


async def _read_answer(
    door: Door, user: str, result: RunResult, summary: str, image: bytes | None = None
) -> types.CallToolResult:
    answered = operation_result(result)
    if result.status != "completed" or answered is None:
        pending = RunView.of_result(result).pending
        return answers.run_answer(result, pending, await door.scene(result.scene_id, user), None)
    data = {"run_id": result.run_id, "scene_id": result.scene_id, **answered}
    return answers.result(summary, data, [image] if image else None)


async def _inspect_request(door: Door, user: str, args: dict[str, Any]) -> RunRequested:
    return await _looks(door).inspect_request(user, args["scene_id"], args["name"])


async def _view_request(door: Door, user: str, args: dict[str, Any]) -> RunRequested:
    return await _looks(door).view_request(
        user,
        args["scene_id"],
        args.get("width", 512),
        args.get("height", 512),
        args.get("azimuth"),
        args.get("elevation"),
        args.get("camera"),
        args.get("shading", DEFAULT_SHADING),
    )


async def read_answer(door: Door, user: str, result: RunResult) -> types.CallToolResult | None:
    """A read run's answer as its tool gives it (the object, or the view's image); None
    when ``result`` is no read's run (its one operation is no read of these tools')."""
    tools = {receipt.tool_name for receipt in result.receipts}  # none ran: a run's answer
    if tools == {INSPECT_TOOL}:
        answered = operation_result(result) or {}
        return await _read_answer(door, user, result, f"object {answered.get('name', '')!r}")
    if tools != {VIEW_TOOL}:
        return None
    png = await _looks(door).image(user, result)
    if result.status == "completed" and png is None:
        raise NotFound("the rendered view has expired from the store; render it again")
    return await _read_answer(door, user, result, f"a view of scene {result.scene_id}", png)


async def _inspect(door: Door, user: str, args: dict[str, Any], ctx: Context) -> Any:
    result = await _run(door, ctx, await _inspect_request(door, user, args))
    return await _read_answer(door, user, result, f"object {args['name']!r}")


async def _view(door: Door, user: str, args: dict[str, Any], ctx: Context) -> Any:
    result = await _run(door, ctx, await _view_request(door, user, args))
    answer = await read_answer(door, user, result)
    assert answer is not None  # a view's run
    return answer


async def _import(door: Door, user: str, args: dict[str, Any], ctx: Context) -> Any:
    # Submitted as its plan through `run`: the same approval, progress and answer.
    return await submit(door, user, await import_plan(door, user, args), ctx)


async def import_plan(door: Door, user: str, args: dict[str, Any]) -> dict[str, Any]:
    """The ``run`` arguments an ``import_asset`` call's checked arguments come to: the
    file's bytes read (from ``data`` or the staged ``upload``) into a one-step plan."""
    if ("data" in args) == ("upload" in args):
        raise ValidationError(
            "give exactly one of `data` (the file base64-encoded) or `upload` (the blob "
            "POST /api/uploads answered)"
        )
    if "upload" in args:
        data = await _looks(door).staged(user, args["upload"])
    else:
        try:
            data = base64.b64decode(args["data"], validate=True)
        except (binascii.Error, ValueError):
            raise ValidationError("argument .data is not base64; encode the file's bytes") from None
    request = await _looks(door).asset_request(
        user, args["scene_id"], data, args["filename"], args["collection"]
    )
    return {"scene_id": request.scene_id, "plan": request.plan}


@contextlib.contextmanager
def _refusals() -> Iterator[None]:
    """The scene door's refusals as tool errors: another user's scene as an unknown one."""
    try:
        yield
    except (NoScene, NoUpload) as exc:
        raise NotFound(str(exc)) from None
    except (AssetRefused, BadView, UploadTooLarge) as exc:
        raise ValidationError(str(exc)) from None


async def call(door: Door, user: str, name: str, args: Any, ctx: Context) -> types.CallToolResult:
    """Answer one of ``TOOLS``; bad input and another user's scene as tool errors."""
    schema = {t.name: t.inputSchema for t in TOOLS}[name]
    checked = check(args, schema)
    handler = {"inspect_object": _inspect, "render_view": _view, "import_asset": _import}[name]
    with _refusals():
        result: types.CallToolResult = await handler(door, user, checked, ctx)
    return result


async def read_request(door: Door, user: str, name: str, args: Any) -> RunRequested:
    """The run an ``inspect_object`` or ``render_view`` call asks for (a door that starts
    the run itself, as an MCP task does); bad input as tool errors, as ``call`` answers."""
    checked = check(args, {t.name: t.inputSchema for t in TOOLS}[name])
    making = {"inspect_object": _inspect_request, "render_view": _view_request}[name]
    with _refusals():
        return await making(door, user, checked)


async def import_args(door: Door, user: str, args: Any) -> dict[str, Any]:
    """The ``run`` arguments an ``import_asset`` call comes to (a door that starts the run
    itself, as an MCP task does); bad input as tool errors, as ``call`` answers them."""
    checked = check(args, IMPORT_ASSET.inputSchema)
    with _refusals():
        return await import_plan(door, user, checked)
